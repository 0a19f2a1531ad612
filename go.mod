module github.com/fencekit/fencekit

go 1.26

require (
	github.com/stretchr/testify v1.12.1
	sigs.k8s.io/yaml v1.6.0
)

require (
	go.yaml.in/yaml/v2 v2.4.2 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)
