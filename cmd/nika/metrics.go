package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/nikahq/nika/event"
	"github.com/nikahq/nika/metrics"
	"github.com/nikahq/nika/provider"
	"github.com/nikahq/nika/workflow"
)

const (
	pushTimeout     = 15 * time.Second // a Pushgateway that does not answer must not hold the exit
	metricsShutdown = 5 * time.Second  // a scrape in progress may finish
)

// metricsFlags are `nika run`'s metrics flags (issue 7).
type metricsFlags struct {
	addr      string
	linger    time.Duration
	push      string
	taskLabel bool
}

func addMetricsFlags(fs *flag.FlagSet) *metricsFlags {
	f := &metricsFlags{}
	fs.StringVar(&f.addr, "metrics-addr", "", "serve Prometheus metrics at http://`ADDR`/metrics while the run lasts (port 0: a free port, named on stderr)")
	fs.DurationVar(&f.linger, "metrics-linger", 0, "keep serving /metrics for `DUR` after the run (needs --metrics-addr; an interrupt ends it)")
	fs.StringVar(&f.push, "pushgateway", "", "push the run's metrics to the Pushgateway at `URL` when it ends (job nika, grouped by workflow)")
	fs.BoolVar(&f.taskLabel, "metrics-task-label", false, "label the task metrics with the task id (high-cardinality)")
	return f
}

// runMetrics is one run's metrics; nil when no flag asks for them. Its methods accept a nil receiver,
// so runWith calls them unconditionally.
type runMetrics struct {
	m         *metrics.Metrics
	flags     *metricsFlags
	workflow  string
	quiet     bool
	url       string // of /metrics; "" without --metrics-addr
	stopServe func() // stops serving /metrics; nil without --metrics-addr

	mu    sync.Mutex
	ran   bool   // the run started: its live stream was wired
	state string // the run's state, from workflow_finished

	// interrupts gets the process's interrupts from start on (runWith's own signal channel is
	// drained by the run): one before finish means the run was interrupted, whatever its state
	// (failure wins over cancelled), and then it does not linger.
	interrupts chan os.Signal
}

// start checks the metrics flags (exit 2), builds the run's metrics with the limiter of every
// provider the workflow uses, and starts serving /metrics (exit 3 when the address cannot be bound).
func (f *metricsFlags) start(w *workflow.Workflow, providers *provider.Registry, quiet bool, stderr io.Writer) (*runMetrics, int, bool) {
	switch {
	case f.linger < 0:
		fmt.Fprintf(stderr, "nika run: --metrics-linger must be ≥ 0, got %s\n", f.linger)
		return nil, exitUsage, false
	case f.linger > 0 && f.addr == "":
		fmt.Fprint(stderr, "nika run: --metrics-linger keeps /metrics up after the run, so it needs --metrics-addr; add --metrics-addr 127.0.0.1:9464 or drop --metrics-linger\n")
		return nil, exitUsage, false
	case f.push != "":
		if u, err := url.Parse(f.push); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			fmt.Fprintf(stderr, "nika run: --pushgateway wants the Pushgateway's base URL, like http://localhost:9091; got %q\n", f.push)
			return nil, exitUsage, false
		}
	}
	if f.addr == "" && f.push == "" {
		return nil, 0, true
	}
	r := &runMetrics{m: metrics.New(metrics.Options{Version: version, TaskLabel: f.taskLabel}), flags: f, workflow: w.Name, quiet: quiet}
	for name, l := range metrics.LimitersOf(providers) { // the providers the run built; the mock has no limiter
		r.m.AddProvider(name, l)
	}
	if f.addr == "" {
		return r, 0, true
	}
	url, stop, err := serveMetrics(f.addr, r.m, "nika run", stderr)
	if err != nil {
		fmt.Fprintf(stderr, "nika run: cannot serve metrics on %s: %v; choose another --metrics-addr (port 0 picks a free one)\n", f.addr, err)
		return nil, exitEnv, false
	}
	r.url, r.stopServe = url, stop
	// With port 0 this line is the only way to learn the address, so --quiet keeps it then.
	if _, port, _ := net.SplitHostPort(f.addr); !quiet || port == "0" {
		fmt.Fprintf(stderr, "nika run: serving metrics at %s\n", r.url)
	}
	if f.linger > 0 { // stopped by finish
		r.interrupts = make(chan os.Signal, 1)
		signal.Notify(r.interrupts, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP) // the run's own set (cmdRun)
	}
	return r, 0, true
}

// sink adds the metrics to the run's live stream, beside live (the progress view, or nil).
func (r *runMetrics) sink(live event.LiveSink) event.LiveSink {
	if r == nil {
		return live
	}
	r.mu.Lock()
	r.ran = true
	r.mu.Unlock()
	return event.LiveFanout{live, r.m, event.LiveFunc(func(l event.Live) {
		if l.Kind == event.LiveWorkflowFinished {
			r.mu.Lock()
			r.state = l.Status
			r.mu.Unlock()
		}
	})}
}

// finish runs when runWith returns (its outputs are out): it pushes the run's metrics, keeps /metrics
// up for --metrics-linger unless the run was interrupted (a signal ends the linger early), then stops
// the server. A failed push is reported on stderr and leaves the exit code alone: the run's outcome is
// the workflow's, not the Pushgateway's.
func (r *runMetrics) finish(signals <-chan os.Signal, stderr io.Writer) {
	if r == nil {
		return
	}
	defer r.stop()
	if r.interrupts != nil {
		defer signal.Stop(r.interrupts)
	}
	r.mu.Lock()
	ran, state := r.ran, r.state
	r.mu.Unlock()
	if !ran {
		return
	}
	if r.flags.push != "" {
		ctx, cancel := context.WithTimeout(context.Background(), pushTimeout)
		err := r.m.Push(ctx, r.flags.push, r.workflow)
		cancel()
		if err != nil {
			fmt.Fprintf(stderr, "nika run: %v\n", err)
		}
	}
	if r.stopServe == nil || r.flags.linger <= 0 || state == "cancelled" {
		return
	}
	select {
	case <-r.interrupts:
		return // interrupted during the run
	default:
	}
	if !r.quiet {
		fmt.Fprintf(stderr, "nika run: the run is over; serving metrics at %s for %s more (interrupt to stop)\n", r.url, r.flags.linger)
	}
	t := time.NewTimer(r.flags.linger)
	defer t.Stop()
	select {
	case <-t.C:
	case <-signals:
	case <-r.interrupts:
	}
}

// stop shuts the /metrics server down and waits for its goroutine.
func (r *runMetrics) stop() {
	if r.stopServe != nil {
		r.stopServe()
	}
}

// serveMetrics serves m at http://ADDR/metrics (port 0: a free port) until stop, which lets a
// scrape in progress finish (for metricsShutdown at most) and waits for the server's goroutine.
// who prefixes what goes wrong later while serving.
func serveMetrics(addr string, m *metrics.Metrics, who string, stderr io.Writer) (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(stderr, "%s: serving metrics: %v\n", who, err)
		}
	}()
	return "http://" + ln.Addr().String() + "/metrics", func() {
		ctx, cancel := context.WithTimeout(context.Background(), metricsShutdown)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			srv.Close()
		}
		<-served
	}, nil
}
