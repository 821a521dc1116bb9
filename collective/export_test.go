package collective

// WithHosts makes NewLocal's ranks pretend to sit on the given hosts, so
// the hierarchical algorithms run in one process.
func WithHosts(hosts []int) Option { return func(o *options) { o.hosts = hosts } }

// SetStageChunk sets the size of a staged chunk of device calls, so that
// modest buffers pipeline over several chunks in the tests; it returns a
// function that restores it.
func SetStageChunk(n int) (restore func()) {
	old := stageChunk
	stageChunk = n
	return func() { stageChunk = old }
}
