package a

// Getter is called through, never followed.
type Getter interface{ Get() int }
