package config

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/fencekit/fencekit/fence"
	"github.com/fencekit/fencekit/internal/nearest"
)

// This file holds the strict reading of a method's parameters: every key
// must be one the method's driver takes (its own, the common ones, the
// options of the agents it stands in for that it ignores), and a secret
// parameter may name a key of a Secret instead of holding the value.

var (
	// ErrUnknownParam means a method's configuration has a key that its
	// driver does not take: most often a typo, which a lenient reader
	// would ignore and leave the method on a default the writer did not
	// mean (a community "private" instead of an SNMPv3 user, a port 623
	// instead of 6230).
	ErrUnknownParam = errors.New("unknown parameter")
	// ErrSecretNotFound means a secret reference names a Secret, or a key
	// of it, that does not exist. SecretSource implementations wrap it.
	ErrSecretNotFound = errors.New("secret not found")
	// ErrNoSecretSource means a method names a Secret but the
	// configuration was given no SecretSource to read it (Config.WithSecrets).
	ErrNoSecretSource = errors.New("no secret source")
)

// SecretSuffix ends the key of a secret reference: password_secret=NAME/KEY
// takes the password from key KEY of the Secret NAME instead of from the
// configuration. Every secret parameter of a driver (password,
// snmp_priv_passwd, community, ...; see ParamSpec.Secret and IsSecret) may be
// given so. A reference and the value are one parameter: given both in one
// ConfigMap they are an error, and a method's reference overrides its
// template's value (and the other way round).
const SecretSuffix = "_secret"

// SecretRef names one key of a Secret in the namespace of the
// configuration (the controller's namespace).
type SecretRef struct {
	Name string // the Secret's name
	Key  string // the key of its data
}

// String returns "name/key".
func (r SecretRef) String() string { return r.Name + "/" + r.Key }

var (
	secretNameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	secretKeyRE  = regexp.MustCompile(`^[-._a-zA-Z0-9]+$`)
)

// ParseSecretRef reads a secret reference, "name/key": name a Secret's
// name (a DNS subdomain), key a key of its data.
func ParseSecretRef(s string) (SecretRef, error) {
	name, key, ok := strings.Cut(strings.TrimSpace(s), "/")
	switch {
	// The value is never quoted: a credential typed where its reference
	// goes would be repeated in the error, and from there in logs and
	// events.
	case !ok:
		return SecretRef{}, errors.New("the value is not a Secret's NAME/KEY (not shown: it may be the secret itself)")
	case len(name) > 253 || !secretNameRE.MatchString(name):
		return SecretRef{}, errors.New("the value's NAME is not a Secret's name, a DNS subdomain of lower case letters, digits, '-' and '.' (not shown: it may be the secret itself)")
	case len(key) > 253 || !secretKeyRE.MatchString(key):
		return SecretRef{}, errors.New("the value's KEY is not a key of a Secret: letters, digits, '-', '_' and '.' (not shown: it may be the secret itself)")
	}
	return SecretRef{Name: name, Key: key}, nil
}

// SecretSource gives the values of Secrets. The value is returned to be
// handed to a driver, and must never be logged or kept. An error must not
// quote the value; when the Secret or its key does not exist it wraps
// ErrSecretNotFound. kube/fencekube.Secrets reads them through an
// informer.
type SecretSource interface {
	SecretValue(ctx context.Context, ref SecretRef) (string, error)
}

// configOwnKeys are the keys of a method's ConfigMaps that belong to the
// configuration, not to a driver; and the options every ClusterLabs agent
// has (fencing.py's) that concern its command line or its own output, not
// the device: a configuration written for an agent may hold them, and they
// are ignored.
var configOwnKeys = []string{"template", "name", "agent_name", "driver", "must_succeed", "must_sucess",
	"quiet", "verbose", "verbose_level", "debug", "debug_file", "version", "help", "separator",
	"plug_separator", "disable_timeout", "login_timeout"}

// keyOf is what a driver takes of one key.
type keyOf uint8

const (
	keyUnknown keyOf = iota
	keyParam         // a parameter (or the configuration's own key)
	keySecret        // a secret parameter, which a reference may give
)

// paramKeys returns every key driver d takes (canonical), and whether it
// is secret.
func paramKeys(d *fence.Driver) map[string]keyOf {
	keys := map[string]keyOf{}
	add := func(specs []fence.ParamSpec) {
		for _, s := range specs {
			k := keyParam
			if s.Secret || fence.IsSecret(s.Name) {
				k = keySecret
			}
			for _, n := range append([]string{s.Name}, s.Aliases...) {
				if keys[fence.CanonicalKey(n)] < k {
					keys[fence.CanonicalKey(n)] = k
				}
			}
		}
	}
	add(fence.CommonParams)
	add(d.Params)
	add(d.Ignored)
	for _, k := range configOwnKeys {
		if keys[k] == keyUnknown {
			keys[k] = keyParam
		}
	}
	return keys
}

// secretRefBase returns, for a key that is a secret reference of driver d
// (password_secret), the key of the parameter it gives (password); "" when
// key is no reference. A driver that checks its parameters itself
// (OpenParams) takes a reference for every key that IsSecret.
func secretRefBase(d *fence.Driver, keys map[string]keyOf, key string) string {
	base, ok := strings.CutSuffix(key, SecretSuffix)
	if !ok || base == "" || keys[key] != keyUnknown {
		return ""
	}
	if keys[base] == keySecret || (d.OpenParams && keys[base] == keyUnknown && fence.IsSecret(base)) {
		return base
	}
	return ""
}

// checkKey returns nil when driver d takes key (canonical), else an error
// wrapping ErrUnknownParam with the nearest known key as a suggestion.
func checkKey(d *fence.Driver, keys map[string]keyOf, key, value string) error {
	if keys[key] != keyUnknown {
		return nil
	}
	if base := secretRefBase(d, keys, key); base != "" {
		if _, err := ParseSecretRef(value); err != nil {
			return fmt.Errorf("a reference to the Secret that holds %s: %w", base, err)
		}
		return nil
	}
	if d.OpenParams {
		// The driver checks the rest itself when it opens (the agent
		// driver, against the agent's metadata).
		return nil
	}
	if base, ok := strings.CutSuffix(key, "_script"); ok && keys[base] == keySecret {
		// The agents' passwd_script and snmp_priv_passwd_script.
		return fmt.Errorf("%s runs a program that prints the %s: a configuration runs none; name a Secret instead, %s%s=NAME/KEY", key, base, base, SecretSuffix)
	}
	if base, ok := strings.CutSuffix(key, SecretSuffix); ok && keys[base] == keyParam {
		return fmt.Errorf("%w: %s is not a secret parameter of driver %s, so it cannot come from a Secret", ErrUnknownParam, base, d.Name)
	}
	// The key is repeated only when it is a typo of a known one: a line
	// that names no parameter at all may be a secret written on its own
	// (a password with '=' in it reads as key=value).
	if s := nearest.Name(key, slices.Sorted(mapKeys(keys))); s != "" {
		return &wrapped{msg: fmt.Sprintf("%v: driver %s takes no parameter %s (did you mean %s?)", ErrUnknownParam, d.Name, key, s), err: ErrUnknownParam}
	}
	return &wrapped{msg: fmt.Sprintf("%v: driver %s takes no such parameter (the key is not repeated: a line that names no parameter may hold a secret)", ErrUnknownParam, d.Name),
		err: errKeyNotShown}
}

// errKeyNotShown marks an unknown key that is near no known one: its error
// names the line, never the key, which may be part of a secret written on
// a line of its own. It wraps ErrUnknownParam.
var errKeyNotShown = fmt.Errorf("%w (not shown)", ErrUnknownParam)

// wrapped is an error with its own message that wraps err.
type wrapped struct {
	msg string
	err error
}

func (w *wrapped) Error() string { return w.msg }
func (w *wrapped) Unwrap() error { return w.err }

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// resolveSecrets returns params with every secret reference of driver d
// replaced by the value it names, read from src. Errors are *ConfigErrors
// naming the ConfigMap, line and key of the reference (origins), never the
// value.
func resolveSecrets(ctx context.Context, d *fence.Driver, params fence.Params, origins map[string]origin, cm, node string, src SecretSource) (fence.Params, error) {
	keys := paramKeys(d)
	var out fence.Params
	for _, k := range slices.Sorted(mapKeys(params)) {
		base := secretRefBase(d, keys, k)
		if base == "" {
			continue
		}
		o, ok := origins[k]
		if !ok {
			o = origin{cm: cm}
		}
		fail := func(err error) (fence.Params, error) {
			return nil, &Error{ConfigMap: o.cm, Key: k, Line: o.line, Node: node, Err: err}
		}
		ref, err := ParseSecretRef(params[k])
		if err != nil {
			return fail(err)
		}
		if src == nil {
			return fail(fmt.Errorf("%w: the %s of this method is in Secret %s, and this configuration reads no Secrets", ErrNoSecretSource, base, ref))
		}
		v, err := src.SecretValue(ctx, ref)
		if err != nil {
			return fail(fmt.Errorf("the %s of this method: %w", base, err))
		}
		if out == nil {
			out = params.Clone()
		}
		delete(out, k)
		out[base] = v
	}
	if out == nil {
		return params, nil
	}
	return out, nil
}
