package provider

import "testing"

// Instances lists every registered instance by name, as a copy the registry's later changes leave
// alone.
func TestRegistryInstances(t *testing.T) {
	r := NewRegistry()
	if got := r.Instances(); len(got) != 0 {
		t.Fatalf("empty registry: %v", got)
	}
	mock := NewMock()
	front := NewFront("openai", nil, FrontConfig{})
	r.Register("mock", mock)
	r.Register("openai", front)
	got := r.Instances()
	if len(got) != 2 || got["mock"] != Provider(mock) || got["openai"] != Provider(front) {
		t.Fatalf("Instances() = %v", got)
	}
	r.Register("openai", nil)
	r.Register("gemini", fixed{"g"})
	if len(got) != 2 || got["openai"] != Provider(front) {
		t.Errorf("the copy changed with the registry: %v", got)
	}
	delete(got, "mock")
	if now := r.Instances(); len(now) != 2 || now["mock"] != Provider(mock) || now["gemini"] == nil {
		t.Errorf("Instances() after the changes = %v", now)
	}
}
