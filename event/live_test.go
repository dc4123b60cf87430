package event

import (
	"strings"
	"testing"
)

func TestLiveFanoutOrder(t *testing.T) {
	var log []string
	rec := func(name string) LiveSink {
		return LiveFunc(func(l Live) { log = append(log, name+":"+l.Kind) })
	}
	f := LiveFanout{rec("a"), nil, LiveFunc(nil), rec("b")}
	f.Observe(Live{Kind: LiveTaskStarted, Task: "t", Iteration: NoIteration})
	f.Observe(Live{Kind: LiveTaskFinished, Task: "t", Status: "success"})
	want := "a:task_started b:task_started a:task_finished b:task_finished"
	if got := strings.Join(log, " "); got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	LiveFanout(nil).Observe(Live{})
}

var _ LiveSink = LiveFunc(nil)
var _ LiveSink = LiveFanout(nil)
