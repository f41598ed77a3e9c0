package b

// Map applies f to each x.
func Map[T any](xs []T, f func(T) T) []T {
	out := make([]T, 0, len(xs))
	for _, x := range xs {
		out = append(out, f(x)) // a function value: not followed
	}
	return out
}
