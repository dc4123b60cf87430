// Command echoserver is a small stdio MCP server for the tests of package tools/mcp and of
// `nika run`. Its tools echo, fail with isError, sleep until cancelled, spawn a grandchild
// (`sleep 300`, with or without the server's stdout), crash, and report progress before
// answering, so the tests can prove the client's error mapping, that Close leaves no process
// behind, and that progress notifications reach the call that asked for them.
//
// Environment: ECHO_READY, when set, is a FIFO the sleep tool writes one line to once it is
// sleeping: "server=<pid> children=<pid,pid,…>", the children being the grandchildren spawn
// started. It lets a test act at that exact moment without polling.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type echoIn struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

type envIn struct {
	Name string `json:"name" jsonschema:"an environment variable"`
}

type none struct{}

type progressIn struct {
	Steps int    `json:"steps" jsonschema:"how many progress notifications to send"`
	Tag   string `json:"tag,omitempty" jsonschema:"a word put in every message"`
}

type spawned struct {
	Pid int `json:"pid"`
}

func main() {
	var mu sync.Mutex
	var children []string
	s := mcp.NewServer(&mcp.Implementation{Name: "echoserver", Version: "v1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo the text back."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "env", Description: "Return an environment variable, or null."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in envIn) (*mcp.CallToolResult, any, error) {
			v, ok := os.LookupEnv(in.Name)
			if !ok {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "unset"}}}, nil, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "=" + v}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Always fails."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "boom: the tool failed"}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "sleep", Description: "Sleep until cancelled."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			if path := os.Getenv("ECHO_READY"); path != "" {
				f, err := os.OpenFile(path, os.O_WRONLY, 0)
				if err != nil {
					return nil, nil, err
				}
				mu.Lock()
				line := fmt.Sprintf("server=%d children=%s\n", os.Getpid(), strings.Join(children, ","))
				mu.Unlock()
				_, err = f.WriteString(line)
				f.Close()
				if err != nil {
					return nil, nil, err
				}
			}
			<-ctx.Done()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "woke"}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "spawn", Description: "Start a grandchild `sleep 300` and return its pid."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, spawned, error) {
			cmd := exec.Command("sleep", "300") // stdin, stdout, stderr: /dev/null
			if err := cmd.Start(); err != nil {
				return nil, spawned{}, err
			}
			mu.Lock()
			children = append(children, strconv.Itoa(cmd.Process.Pid))
			mu.Unlock()
			return nil, spawned{Pid: cmd.Process.Pid}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "spawn_stdout", Description: "Start a grandchild `sleep 300` that shares the server's stdout, and return its pid."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, spawned, error) {
			cmd := exec.Command("sleep", "300")
			cmd.Stdout = os.Stdout // the grandchild holds the MCP pipe open after the server is gone
			if err := cmd.Start(); err != nil {
				return nil, spawned{}, err
			}
			return nil, spawned{Pid: cmd.Process.Pid}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Exit at once, mid-call."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ none) (*mcp.CallToolResult, any, error) {
			fmt.Fprintln(os.Stderr, "echoserver: crashing on purpose")
			os.Exit(3)
			return nil, nil, nil
		})
	// progress sends, when the call carries a progress token, one notification under a token
	// that is not the call's, then steps notifications under the call's token ("<tag> step i",
	// progress i of steps), then pings the client: the client handles what a server sends in
	// order, so its answer means every notification before it was handled. It answers with the
	// token it was given.
	mcp.AddTool(s, &mcp.Tool{Name: "progress", Description: "Report progress, then answer with the progress token."},
		func(ctx context.Context, req *mcp.CallToolRequest, in progressIn) (*mcp.CallToolResult, any, error) {
			token := req.Params.GetProgressToken()
			if token == nil {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "no token"}}}, nil, nil
			}
			err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: "not-the-call's", Progress: 99, Message: "stray"})
			for i := 1; i <= in.Steps && err == nil; i++ {
				err = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token,
					Progress: float64(i), Total: float64(in.Steps), Message: fmt.Sprintf("%s step %d", in.Tag, i)})
			}
			if err == nil {
				err = req.Session.Ping(ctx, nil)
			}
			if err != nil {
				return nil, nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("token=%v", token)}}}, nil, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Printf("echoserver: %v", err)
	}
}
