package httpserve

// Receiving is the number of requests whose body is still arriving.
func (s *Server) Receiving() int {
	s.bodies.mu.Lock()
	defer s.bodies.mu.Unlock()
	return len(s.bodies.reading)
}
