package spec

import (
	"regexp"
	"strings"
)

// The exec blocklist of LANGUAGE.md §5.2: a floor, not a sandbox. It is
// matched on the whole command after collapsing whitespace runs, and per
// simple command (split at ; & | and newlines) for the rules that name a
// program.

var (
	reSpaces     = regexp.MustCompile(`\s+`)
	rePipeShell  = regexp.MustCompile(`\b(curl|wget)\b[^|;&]*\|\s*(sudo(\s+-\S+)*\s+)?(env\s+)?(\S*/)?(sh|bash|zsh|dash|ksh|fish)\b`)
	reDDDevice   = regexp.MustCompile(`(^|[\s;&|(])dd\s[^;&|]*\bof=/dev/`)
	reRedirDisk  = regexp.MustCompile(`>>?\s*/dev/(sd|hd|nvme|mmcblk|disk)`)
	reSplitSimpl = regexp.MustCompile(`\|\||&&|[;&|\n()]`)
)

var rmTargets = map[string]bool{"/": true, "/*": true, "~": true, "~/": true, "~/*": true, "$HOME": true, "${HOME}": true}

var powerCommands = map[string]bool{"shutdown": true, "reboot": true, "halt": true, "poweroff": true}

// Blocked returns a description of the blocklist rule a shell command
// matches, or "" when it matches none.
func Blocked(command string) string {
	collapsed := reSpaces.ReplaceAllString(strings.TrimSpace(command), " ")
	if strings.Contains(reSpaces.ReplaceAllString(command, ""), ":(){:|:&};:") {
		return "a fork bomb"
	}
	if rePipeShell.MatchString(collapsed) {
		return "a download piped into a shell"
	}
	if reDDDevice.MatchString(collapsed) || reRedirDisk.MatchString(collapsed) {
		return "a write to a raw disk device"
	}
	for _, simple := range reSplitSimpl.Split(command, -1) {
		words := strings.Fields(simple)
		for len(words) > 0 && (words[0] == "sudo" || words[0] == "exec" || words[0] == "command" || strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "-")) {
			words = words[1:]
		}
		if len(words) == 0 {
			continue
		}
		for i := range words {
			words[i] = strings.Trim(words[i], `"'`)
		}
		prog := words[0]
		if j := strings.LastIndexByte(prog, '/'); j >= 0 && j < len(prog)-1 {
			prog = prog[j+1:]
		}
		switch {
		case powerCommands[prog]:
			return "`" + prog + "`"
		case prog == "mkfs" || strings.HasPrefix(prog, "mkfs."):
			return "`mkfs`"
		case prog == "rm":
			if hasFlag(words[1:], "r", "--recursive") && anyTarget(words[1:], rmTargets) {
				return "a recursive `rm` of / or the home directory"
			}
		case prog == "chmod" || prog == "chown":
			if hasFlag(words[1:], "R", "--recursive") && anyTarget(words[1:], map[string]bool{"/": true}) {
				return "a recursive `" + prog + "` of /"
			}
		}
	}
	return ""
}

// hasFlag reports a short flag letter (case-insensitive for r) in any
// combined short option, or the long form.
func hasFlag(args []string, letter, long string) bool {
	for _, a := range args {
		if a == long {
			return true
		}
		if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") {
			f := a[1:]
			if strings.Contains(f, letter) || (letter == "r" && strings.Contains(f, "R")) {
				return true
			}
		}
	}
	return false
}

func anyTarget(args []string, targets map[string]bool) bool {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") && targets[a] {
			return true
		}
	}
	return false
}
