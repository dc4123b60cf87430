//go:build linux

package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// openPTY opens a pseudo-terminal: its master (the test reads what nika draws) and its slave (nika's
// stderr, a terminal, so the live view is on).
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	ioctl := func(req uintptr, arg unsafe.Pointer) error {
		if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), req, uintptr(arg)); e != 0 {
			return e
		}
		return nil
	}
	var unlock int32
	var n uint32
	if err := ioctl(syscall.TIOCSPTLCK, unsafe.Pointer(&unlock)); err != nil {
		m.Close()
		t.Skipf("unlocking the pseudo-terminal: %v", err)
	}
	if err := ioctl(syscall.TIOCGPTN, unsafe.Pointer(&n)); err != nil {
		m.Close()
		t.Skipf("naming the pseudo-terminal: %v", err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.FormatUint(uint64(n), 10), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Skipf("opening the pseudo-terminal's slave: %v", err)
	}
	return m, s
}

// On a terminal, `nika run` shows the provider's requests in flight on the live view while a request
// is out: the fake server holds the request until the test has seen the line drawn, then answers.
func TestRunProgressShowsProviderInFlight(t *testing.T) {
	arrived, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { close(arrived) })
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, watchedAnswer)
	}))
	defer srv.Close()
	var releaseOnce sync.Once
	letGo := func() { releaseOnce.Do(func() { close(release) }) }
	defer letGo()

	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "watched.nika.yaml"), watchedYAML)
	master, slave := openPTY(t)
	defer master.Close()
	cmd := exec.Command(nikaBin, "run", "watched.nika.yaml", "--no-trace")
	cmd.Dir = dir
	cmd.Env = append(append([]string{}, testEnv...), "OPENAI_BASE_URL="+srv.URL+"/v1", "OPENAI_API_KEY=sk-test")
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, slave
	if err := cmd.Start(); err != nil {
		slave.Close()
		t.Fatal(err)
	}
	slave.Close() // nika holds its own copy; the master reads EOF (EIO) once nika has exited
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		cmd.Process.Kill() // a no-op once it exited
	}()

	// Read the terminal until the provider's line shows, then let the request go; keep reading to
	// the end, so that nika never blocks on a full terminal.
	line := regexp.MustCompile(`openai: 1 in flight, 0 waiting \(limit [1-9]\d*\)`)
	seen := make(chan struct{})
	drawn := make(chan []byte, 1)
	go func() {
		var all []byte
		buf := make([]byte, 4096)
		found := false
		for {
			n, err := master.Read(buf)
			all = append(all, buf[:n]...)
			if !found && line.Match(all) {
				found = true
				close(seen)
			}
			if err != nil {
				drawn <- all
				return
			}
		}
	}()
	select {
	case <-arrived:
	case err := <-exited:
		t.Fatalf("nika exited (%v) before its request reached the server; stdout %q", err, stdout.String())
	}
	select {
	case <-seen:
	case err := <-exited:
		t.Fatalf("nika exited (%v) without showing the request in flight", err)
	case <-time.After(60 * time.Second): // a guard against a hang, not a timing assertion
		t.Fatal("the live view never showed the request in flight")
	}
	letGo()
	if err := <-exited; err != nil {
		t.Fatalf("nika run: %v; stdout %q", err, stdout.String())
	}
	if got := stdout.String(); got != `{"answer":"hi"}`+"\n" {
		t.Errorf("stdout %q", got)
	}
	master.SetReadDeadline(time.Now().Add(10 * time.Second)) // the slave is closed: EIO comes at once
	out := <-drawn
	// The last status line, drawn from the final provider_state at workflow_finished, no longer
	// shows the provider, and the view is erased before the outputs.
	lines := bytes.Split(out, []byte("\r\x1b[K"))
	if len(lines) < 2 || len(lines[len(lines)-1]) != 0 {
		t.Fatalf("the view was not erased at the end:\n%q", out)
	}
	if last := lines[len(lines)-2]; bytes.Contains(last, []byte("openai:")) {
		t.Errorf("the last status line %q still shows the provider:\n%q", last, out)
	}
}
