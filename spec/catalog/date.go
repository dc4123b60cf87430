package catalog

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ParseDateDuration parses a nika:date duration: a Go duration (time.ParseDuration) that may
// also use the unit `d`, 24 hours, in any component: `2d`, `1d12h`, `-1.5d`, `90m`.
func ParseDateDuration(s string) (time.Duration, error) {
	bad := fmt.Errorf("invalid duration %q", s)
	rest := s
	sign := ""
	if rest != "" && (rest[0] == '-' || rest[0] == '+') {
		sign, rest = rest[:1], rest[1:]
	}
	if rest == "0" {
		return 0, nil
	}
	if rest == "" {
		return 0, bad
	}
	var days float64
	var goPart strings.Builder
	for rest != "" {
		i := 0
		for i < len(rest) && (rest[i] == '.' || rest[i] >= '0' && rest[i] <= '9') {
			i++
		}
		j := i
		for j < len(rest) && rest[j] != '.' && (rest[j] < '0' || rest[j] > '9') {
			j++
		}
		num, unit := rest[:i], rest[i:j]
		if num == "" || unit == "" {
			return 0, bad
		}
		if unit == "d" {
			f, err := strconv.ParseFloat(num, 64)
			if err != nil {
				return 0, bad
			}
			days += f
		} else {
			goPart.WriteString(num + unit)
		}
		rest = rest[j:]
	}
	var d time.Duration
	if goPart.Len() > 0 {
		var err error
		if d, err = time.ParseDuration(goPart.String()); err != nil {
			return 0, bad
		}
	}
	total := float64(d) + days*float64(24*time.Hour)
	if total > math.MaxInt64 {
		return 0, fmt.Errorf("invalid duration %q: too long", s)
	}
	d = time.Duration(total)
	if sign == "-" {
		d = -d
	}
	return d, nil
}

// dateFormatLayout returns the Go layout of a named nika:date format ("" for the epoch
// formats unix and unix_ms).
func dateFormatLayout(name string) (layout string, ok bool) {
	switch name {
	case "rfc3339":
		return time.RFC3339, true
	case "date":
		return "2006-01-02", true
	case "time":
		return "15:04:05", true
	case "unix", "unix_ms":
		return "", true
	}
	return "", false
}

// CheckDateFormat reports why f is not a nika:date format (NIKA-BUILTIN-DATE-001), or nil:
// a format is a name (rfc3339, date, time, unix, unix_ms) or a strftime pattern whose
// directives are among %Y %y %m %d %H %M %S %L %j %a %A %b %B %z %Z %%.
func CheckDateFormat(f string) error {
	if f == "" {
		return errors.New("the format is empty")
	}
	if _, ok := dateFormatLayout(f); ok {
		return nil
	}
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			continue
		}
		if i+1 >= len(f) {
			return errors.New("the format ends with a lone `%`; write `%%` for a percent sign")
		}
		i++
		switch f[i] {
		case 'Y', 'y', 'm', 'd', 'H', 'M', 'S', 'L', 'j', 'a', 'A', 'b', 'B', 'z', 'Z', '%':
		default:
			return fmt.Errorf("unsupported directive `%%%s`", directive(f[i:]))
		}
	}
	return nil
}

func directive(s string) string {
	for i := range s {
		if i > 0 {
			return s[:i]
		}
	}
	return s
}

// checkTimezone reports why name is not a usable IANA time zone. It uses time.LoadLocation,
// so it depends on the time zone database of the machine (or the Go installation, or an
// embedding program that imports time/tzdata): on a machine without one, every zone other than
// UTC is reported. "Local" is refused because it changes with the machine.
func checkTimezone(name string) error {
	switch name {
	case "":
		return errors.New("is empty")
	case "Local":
		return errors.New("depends on the machine running the workflow")
	}
	if _, err := time.LoadLocation(name); err != nil {
		return errors.New("is not a known IANA time zone")
	}
	return nil
}

func checkRFC3339(s string) error {
	if _, err := time.Parse(time.RFC3339, s); err != nil {
		return errors.New("is not an RFC 3339 timestamp")
	}
	return nil
}

// checkParseInput checks a nika:date parse input against a named format; strftime patterns
// are left to the runtime.
func checkParseInput(input, format string) error {
	switch format {
	case "unix", "unix_ms":
		if _, err := strconv.ParseInt(input, 10, 64); err != nil {
			return fmt.Errorf("is not a `%s` timestamp (a decimal integer)", format)
		}
		return nil
	}
	layout, ok := dateFormatLayout(format)
	if !ok {
		return nil
	}
	if _, err := time.Parse(layout, input); err != nil {
		return fmt.Errorf("does not match the format `%s` (%s)", format, layout)
	}
	return nil
}
