package expr

// pathError is an error at a field path inside a policy.
type pathError struct {
	Path string
	Err  error
}

func (e *pathError) Error() string { return e.Path + ": " + e.Err.Error() }
func (e *pathError) Unwrap() error { return e.Err }

// PathErrors collects the errors of one template.
type PathErrors []*pathError

func (l PathErrors) Error() string {
	s := ""
	for i, e := range l {
		if i > 0 {
			s += "\n"
		}
		s += e.Error()
	}
	return s
}
