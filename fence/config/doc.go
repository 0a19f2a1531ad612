// Package config reads and checks the fence configuration of the
// Kubernetes node-fencing design and turns a node's steps into the levels
// package fence runs.
//
// The configuration is a set of ConfigMaps holding .properties bodies:
//
//	fence-config-<node>            config.properties: node_name, isolation,
//	                               power_management, recovery, kdump
//	fence-method-<method>-<node>   method.properties: template and parameters
//	fence-method-template-<name>   template.properties: shared parameters
//
// A host reads them (LoadConfigMaps from YAML or JSON, or from the API
// server), parses them (Parse, or ParsePartial, which keeps every node whose
// own configuration is valid so that one broken ConfigMap stops only the
// fencing it concerns), and checks them against the drivers of a registry
// (Config.Validate, or ParseFor and ValidateConfigMaps at once). A Config
// then gives a node's steps as fence levels (Config.Levels), a method opened
// from its parameters (Config.OpenMethod), or a fence.Fencer over every node
// (Config.Fencer).
//
// What always holds:
//
//   - Parsing is strict: an unknown key, a key given twice (an alias
//     counts as its parameter) and a value a driver refuses are errors,
//     each a *Error naming the ConfigMap, its line, the key and the node;
//     all are reported at once, and Parse returns no Config.
//   - A credential never appears in an error, a log record or %v output: a
//     secret parameter is a fence.Secret, and may name a key of a Secret
//     instead of holding the value (password_secret=bmc-creds/password),
//     read only when the method is opened (Config.WithSecrets).
//   - The configuration names the node it is for (node_name), and a method
//     ConfigMap that two nodes would both read is an error.
package config
