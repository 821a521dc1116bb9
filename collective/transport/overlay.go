package transport

// Overlay returns a Transport that uses links in place of base's links to
// the peers it names (shared memory for the peers on the same host, TCP for
// the rest). Closing it closes those links, then base.
func Overlay(base Transport, name string, links map[int]Link) Transport {
	return &overlay{Transport: base, name: name, links: links}
}

type overlay struct {
	Transport
	name  string
	links map[int]Link
}

func (o *overlay) Name() string { return o.name }

func (o *overlay) Link(peer int) Link {
	if l, ok := o.links[peer]; ok {
		return l
	}
	return o.Transport.Link(peer)
}

func (o *overlay) Close() error {
	for _, l := range o.links {
		l.Close()
	}
	return o.Transport.Close()
}
