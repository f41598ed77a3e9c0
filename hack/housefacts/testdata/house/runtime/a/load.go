package a

func (s *Server) load() {
	helper()
	s.getter.Get() // Get is an interface's method: no arrow to iface.go
}
