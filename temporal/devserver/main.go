// Command devserver is a real Temporal server in one process, for developing nika's Temporal
// driver and for CI: the embedded go.temporal.io/server with its four services (frontend,
// history, matching, worker) on one SQLite file, the namespaces it is given registered before it
// starts, and no web UI. It is what `temporal server start-dev` is, for a machine where the
// temporal CLI cannot be installed; it is not meant for production (one history shard, one
// SQLite writer, no TLS, no authorization).
//
// It lives in its own Go module so that nika's module does not depend on the server (hundreds
// of modules and minutes of cold build): build it with
//
//	go -C temporal/devserver build -o /tmp/nika-devserver .
//
// or run it directly:
//
//	go -C temporal/devserver run . --addr 127.0.0.1:7233 --db /tmp/nika-temporal.db
//
// It prints one line on stdout, "devserver: listening on HOST:PORT (namespace default, db FILE)",
// once its frontend answers and the namespaces are there, logs the server's warnings and errors
// on stderr, and stops cleanly on SIGINT or SIGTERM. The same --db file again resumes the runs
// it held (a run whose server was killed goes on where its history stops). Point nika at it:
//
//	nika worker --temporal 127.0.0.1:7233
//	nika run --temporal 127.0.0.1:7233 flow.nika.yaml
//
// The integration tests of cmd/nika find the built binary through $NIKA_TEMPORAL_DEVSERVER.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("devserver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.addr, "addr", "127.0.0.1:7233", "the frontend's `HOST:PORT` (the one address clients dial)")
	fs.StringVar(&o.db, "db", "", "the SQLite `FILE` that keeps the server's state (created with its schema if missing; empty: in memory, lost at exit)")
	namespaces := fs.String("namespace", "default", "the `NAMESPACES` to register, comma-separated")
	fs.StringVar(&o.logLevel, "log-level", "warn", "the server's log `LEVEL` on stderr: debug, info, warn, error")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "devserver: unexpected arguments %q\n", fs.Args())
		return 2
	}
	for _, ns := range strings.Split(*namespaces, ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			o.namespaces = append(o.namespaces, ns)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	srv, err := start(o, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "devserver: %v\n", err)
		return 1
	}
	ready, cancel := context.WithTimeout(ctx, time.Minute)
	err = waitReady(ready, o.addr, o.namespaces)
	cancel()
	if err == nil {
		db := o.db
		if db == "" {
			db = "in memory"
		}
		fmt.Fprintf(stdout, "devserver: listening on %s (namespace %s, db %s)\n", o.addr, strings.Join(o.namespaces, ","), db)
		<-ctx.Done()
	} else if ctx.Err() == nil {
		fmt.Fprintf(stderr, "devserver: the server started but does not answer: %v\n", err)
	}
	if serr := srv.Stop(); serr != nil {
		fmt.Fprintf(stderr, "devserver: stopping: %v\n", serr)
		return 1
	}
	if err != nil && ctx.Err() == nil {
		return 1
	}
	return 0
}
