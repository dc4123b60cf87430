package temporal

import (
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"
	tw "go.temporal.io/sdk/workflow"
)

// Register registers the run workflow (WorkflowName), the job activity (JobActivity) and the
// agent's step activities (AgentArmActivity, AgentAskActivity, AgentCallActivity) of a on a
// worker (or a test environment, which has the same methods).
func Register(r worker.Registry, a *Activities) {
	r.RegisterWorkflowWithOptions(Run, tw.RegisterOptions{Name: WorkflowName})
	r.RegisterActivityWithOptions(a.RunJob, activity.RegisterOptions{Name: JobActivity})
	r.RegisterActivityWithOptions(a.ArmAgent, activity.RegisterOptions{Name: AgentArmActivity})
	r.RegisterActivityWithOptions(a.AskAgent, activity.RegisterOptions{Name: AgentAskActivity})
	r.RegisterActivityWithOptions(a.CallAgent, activity.RegisterOptions{Name: AgentCallActivity})
}
