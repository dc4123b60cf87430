package temporal

import (
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
	tw "go.temporal.io/sdk/workflow"
)

// Register registers the run workflow (WorkflowName) and the job activity (JobActivity) of a on
// a worker (or a test environment, which has the same methods).
func Register(r worker.Registry, a *Activities) {
	r.RegisterWorkflowWithOptions(Run, tw.RegisterOptions{Name: WorkflowName})
	r.RegisterActivityWithOptions(a.RunJob, activity.RegisterOptions{Name: JobActivity})
}
