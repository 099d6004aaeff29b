module github.com/blksim/blksim

go 1.26.8

require (
	github.com/BurntSushi/toml v1.6.0
	github.com/cockroachdb/datadriven v1.0.3
	github.com/dgraph-io/ristretto/v2 v2.4.2
	github.com/google/btree v1.1.3
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
	golang.org/x/sys v0.36.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dustin/go-humanize v1.0.1 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)
