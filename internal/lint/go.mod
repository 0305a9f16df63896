module github.com/podsup/podsup/internal/lint

go 1.26.0

require (
	github.com/podsup/podsup v0.0.0-00010101000000-000000000000
	golang.org/x/tools v0.49.0
)

require (
	github.com/google/go-cmp v0.7.0 // indirect
	golang.org/x/mod v0.41.0 // indirect
	golang.org/x/sync v0.23.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)

// The lint checks the podsup beside it.
replace github.com/podsup/podsup => ../../
