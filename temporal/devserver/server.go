package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/log"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"
)

// options are the command's flags.
type options struct {
	addr, db, logLevel string
	namespaces         []string
}

// clusterName is the one cluster's name (it is recorded with each namespace).
const clusterName = "active"

// start builds the server on o's SQLite file and starts it; it returns once the services
// started (waitReady says when the frontend answers).
func start(o options, stderr io.Writer) (temporal.Server, error) {
	host, portText, err := net.SplitHostPort(o.addr)
	if err != nil {
		return nil, fmt.Errorf("--addr %q: %w", o.addr, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port <= 0 || port > 65535 {
		return nil, fmt.Errorf("--addr %q: the port must be a number in 1..65535", o.addr)
	}
	cfg, err := serverConfig(host, port, o.db)
	if err != nil {
		return nil, err
	}
	sqlCfg := cfg.Persistence.DataStores[sqliteplugin.PluginName].SQL
	if o.db != "" { // a new file gets the schema; an existing one is the state of a previous server
		if _, err := os.Stat(o.db); os.IsNotExist(err) {
			if err := sqlite.SetupSchema(sqlCfg); err != nil {
				return nil, fmt.Errorf("creating the schema in %s: %w", o.db, err)
			}
		}
	}
	// Namespaces are written to the database before the server starts (which then loads them),
	// as the temporal CLI's dev server does; one that exists already is left as it is.
	var nss []*sqlite.NamespaceConfig
	for _, name := range o.namespaces {
		ns, err := sqlite.NewNamespaceConfig(clusterName, name, false, nil)
		if err != nil {
			return nil, fmt.Errorf("namespace %q: %w", name, err)
		}
		nss = append(nss, ns)
	}
	if err := sqlite.CreateNamespaces(sqlCfg, nss...); err != nil {
		return nil, fmt.Errorf("registering the namespaces: %w", err)
	}
	logger := log.NewZapLogger(log.BuildZapLogger(log.Config{Level: o.logLevel, Format: "console"}))
	authorizer, err := authorization.GetAuthorizerFromConfig(&cfg.Global.Authorization)
	if err != nil {
		return nil, err
	}
	claims, err := authorization.GetClaimMapperFromConfig(&cfg.Global.Authorization, logger)
	if err != nil {
		return nil, err
	}
	srv, err := temporal.NewServer(
		temporal.WithConfig(cfg),
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithLogger(logger),
		temporal.WithAuthorizer(authorizer),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return claims }),
		temporal.WithDynamicConfigClient(dynamicconfig.StaticClient{
			// One partition per task queue: with a few pollers on one machine, more partitions
			// only add the forwarding between them to every task's latency.
			dynamicconfig.MatchingNumTaskqueueReadPartitions.Key():  1,
			dynamicconfig.MatchingNumTaskqueueWritePartitions.Key(): 1,
		}),
	)
	if err != nil {
		return nil, fmt.Errorf("building the server: %w", err)
	}
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("starting the server: %w", err)
	}
	return srv, nil
}

// serverConfig is the static configuration of a one-process server: the frontend on
// host:port, the other services' gRPC and membership ports picked by the kernel on the
// loopback, persistence and visibility on one SQLite database, archival off, no metrics
// listener and no pprof.
func serverConfig(host string, port int, db string) (*config.Config, error) {
	sqlCfg := &config.SQL{PluginName: sqliteplugin.PluginName, DatabaseName: db,
		// WAL with synchronous=NORMAL: a commit survives the process being killed (what a dev
		// server must survive) without an fsync per transaction.
		ConnectAttributes: map[string]string{"mode": "rwc", "journal_mode": "wal", "synchronous": "NORMAL"}}
	if db == "" {
		sqlCfg.DatabaseName = "nika-devserver"
		sqlCfg.ConnectAttributes = map[string]string{"mode": "memory", "cache": "shared"}
	}
	cfg := &config.Config{}
	cfg.Global.Membership = config.Membership{MaxJoinDuration: 30 * time.Second, BroadcastAddress: "127.0.0.1"}
	cfg.Persistence = config.Persistence{
		DefaultStore: sqliteplugin.PluginName, VisibilityStore: sqliteplugin.PluginName, NumHistoryShards: 1,
		DataStores: map[string]config.DataStore{sqliteplugin.PluginName: {SQL: sqlCfg}},
	}
	frontend := net.JoinHostPort(host, strconv.Itoa(port))
	cfg.ClusterMetadata = &cluster.Config{
		FailoverVersionIncrement: 10, MasterClusterName: clusterName, CurrentClusterName: clusterName,
		ClusterInformation: map[string]cluster.ClusterInformation{
			clusterName: {Enabled: true, InitialFailoverVersion: 1, RPCAddress: frontend},
		},
	}
	cfg.DCRedirectionPolicy = config.DCRedirectionPolicy{Policy: "noop"}
	cfg.Services = map[string]config.Service{}
	for _, name := range []string{"frontend", "history", "matching", "worker"} {
		rpc := config.RPC{BindOnIP: "127.0.0.1"}
		if name == "frontend" {
			rpc.GRPCPort, rpc.BindOnIP = port, host
		}
		var err error
		if rpc.MembershipPort, err = freePort(); err != nil {
			return nil, err
		}
		if rpc.GRPCPort == 0 {
			if rpc.GRPCPort, err = freePort(); err != nil {
				return nil, err
			}
		}
		cfg.Services[name] = config.Service{RPC: rpc}
	}
	cfg.Archival = config.Archival{History: config.HistoryArchival{State: "disabled"}, Visibility: config.VisibilityArchival{State: "disabled"}}
	cfg.NamespaceDefaults = config.NamespaceDefaults{Archival: config.ArchivalNamespaceDefaults{
		History: config.HistoryArchivalNamespaceDefaults{State: "disabled"}, Visibility: config.VisibilityArchivalNamespaceDefaults{State: "disabled"},
	}}
	// The server's own worker service dials the frontend as a client.
	cfg.PublicClient = config.PublicClient{HostPort: frontend}
	return cfg, nil
}

// freePort is a loopback port the kernel gave and took back (the server binds it a moment later).
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitReady returns once the frontend at addr answers its health check and describes each
// namespace: then a worker or a client can use it.
func waitReady(ctx context.Context, addr string, namespaces []string) error {
	var last error
	for {
		last = ping(ctx, addr, namespaces)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func ping(ctx context.Context, addr string, namespaces []string) error {
	c, err := client.DialContext(ctx, client.Options{HostPort: addr, Logger: quiet{}})
	if err != nil {
		return err
	}
	defer c.Close()
	for _, ns := range namespaces {
		if _, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: ns}); err != nil {
			return fmt.Errorf("namespace %s: %w", ns, err)
		}
	}
	return nil
}

// quiet drops the SDK client's log lines while the server is polled.
type quiet struct{}

var _ sdklog.Logger = quiet{}

func (quiet) Debug(string, ...any) {}
func (quiet) Info(string, ...any)  {}
func (quiet) Warn(string, ...any)  {}
func (quiet) Error(string, ...any) {}
