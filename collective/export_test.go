package collective

// WithHosts makes NewLocal's ranks pretend to sit on the given hosts, so
// the hierarchical algorithms run in one process.
func WithHosts(hosts []int) Option { return func(o *options) { o.hosts = hosts } }
