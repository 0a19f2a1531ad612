// Package kubefake is controller-runtime's fake client for unit tests,
// recording the requests it is sent, in order, and letting a test answer a
// request in place of the fake (a conflict, a refusal) or play another
// client just before the fake serves it.
package kubefake

import (
	"context"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// Request is a request the client was sent.
type Request struct {
	// Verb is get, list, create, update, patch, delete or deleteall; a
	// subresource's request has it after a slash, as "patch/status" or
	// "create/eviction". Apply requests are served, not recorded.
	Verb string
	// Kind is the kind of the object (or of the list, as "NodeList").
	Kind string
	// Namespace and Name name the object; empty for a list.
	Namespace, Name string
	// Object is a copy of the object or list as the caller gave it, before
	// the request.
	Object runtime.Object
	// PatchType and Patch are a patch's type and body.
	PatchType types.PatchType
	Patch     string
	// Delete holds a delete's options.
	Delete client.DeleteOptions
}

// String returns the request as "verb Kind namespace/name" ("verb Kind
// name" for a cluster-scoped object), the patch's body after it.
func (r Request) String() string {
	s := r.Verb + " " + r.Kind
	switch {
	case r.Namespace != "":
		s += " " + r.Namespace + "/" + r.Name
	case r.Name != "":
		s += " " + r.Name
	}
	if r.Patch != "" {
		s += " " + r.Patch
	}
	return s
}

// Client is the client a test gives the code under test. Its requests go
// to Fake once Before (when set) lets them.
type Client struct {
	client.WithWatch
	// Fake is the fake client itself, for a test's own reads and writes,
	// which are not recorded.
	Fake client.WithWatch

	before   func(Request) error
	mu       sync.Mutex
	requests []Request
}

// New returns a Client over fake (from controller-runtime's
// fake.NewClientBuilder). before, when not nil, is called with every
// request before fake serves it: an error it returns is the request's
// answer, and fake does not serve it.
func New(fake client.WithWatch, before func(Request) error) *Client {
	c := &Client{Fake: fake, before: before}
	c.WithWatch = interceptor.NewClient(fake, interceptor.Funcs{
		Get: func(ctx context.Context, f client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			return c.serve(Request{Verb: "get", Object: obj, Namespace: key.Namespace, Name: key.Name}, func() error { return f.Get(ctx, key, obj, opts...) })
		},
		List: func(ctx context.Context, f client.WithWatch, l client.ObjectList, opts ...client.ListOption) error {
			return c.serve(Request{Verb: "list", Object: l}, func() error { return f.List(ctx, l, opts...) })
		},
		Create: func(ctx context.Context, f client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			return c.serve(Request{Verb: "create", Object: obj}, func() error { return f.Create(ctx, obj, opts...) })
		},
		Update: func(ctx context.Context, f client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			return c.serve(Request{Verb: "update", Object: obj}, func() error { return f.Update(ctx, obj, opts...) })
		},
		Delete: func(ctx context.Context, f client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			r := Request{Verb: "delete", Object: obj}
			r.Delete.ApplyOptions(opts)
			return c.serve(r, func() error { return f.Delete(ctx, obj, opts...) })
		},
		Patch: func(ctx context.Context, f client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			r, err := patchRequest("patch", obj, p)
			if err != nil {
				return err
			}
			return c.serve(r, func() error { return f.Patch(ctx, obj, p, opts...) })
		},
		DeleteAllOf: func(ctx context.Context, f client.WithWatch, obj client.Object, opts ...client.DeleteAllOfOption) error {
			return c.serve(Request{Verb: "deleteall", Object: obj}, func() error { return f.DeleteAllOf(ctx, obj, opts...) })
		},
		SubResourceCreate: func(ctx context.Context, f client.Client, sub string, obj, subObj client.Object, opts ...client.SubResourceCreateOption) error {
			return c.serve(Request{Verb: "create/" + sub, Object: obj}, func() error { return f.SubResource(sub).Create(ctx, obj, subObj, opts...) })
		},
		SubResourceUpdate: func(ctx context.Context, f client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			return c.serve(Request{Verb: "update/" + sub, Object: obj}, func() error { return f.SubResource(sub).Update(ctx, obj, opts...) })
		},
		SubResourcePatch: func(ctx context.Context, f client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			r, err := patchRequest("patch/"+sub, obj, p)
			if err != nil {
				return err
			}
			return c.serve(r, func() error { return f.SubResource(sub).Patch(ctx, obj, p, opts...) })
		},
	})
	return c
}

func patchRequest(verb string, obj client.Object, p client.Patch) (Request, error) {
	data, err := p.Data(obj)
	if err != nil {
		return Request{}, err
	}
	return Request{Verb: verb, Object: obj, PatchType: p.Type(), Patch: string(data)}, nil
}

// serve records r, asks before, and serves r with do.
func (c *Client) serve(r Request, do func() error) error {
	r.Object = r.Object.DeepCopyObject()
	if gvk, err := c.Fake.GroupVersionKindFor(r.Object); err == nil {
		r.Kind = gvk.Kind
	}
	if _, list := r.Object.(client.ObjectList); !list && r.Name == "" {
		if a, err := meta.Accessor(r.Object); err == nil {
			r.Namespace, r.Name = a.GetNamespace(), a.GetName()
		}
	}
	c.mu.Lock()
	c.requests = append(c.requests, r)
	c.mu.Unlock()
	if c.before != nil {
		if err := c.before(r); err != nil {
			return err
		}
	}
	return do()
}

// Requests returns the requests sent so far, in order.
func (c *Client) Requests() []Request {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Request(nil), c.requests...)
}

// Take returns the requests sent since the last Take, and forgets them.
func (c *Client) Take() []Request {
	c.mu.Lock()
	defer c.mu.Unlock()
	rs := c.requests
	c.requests = nil
	return rs
}

// TakeWrites returns, as their String, the requests since the last Take
// (or TakeWrites) that write (every verb but get and list), and forgets
// every request since then.
func (c *Client) TakeWrites() []string {
	var out []string
	for _, r := range c.Take() {
		if v, _, _ := strings.Cut(r.Verb, "/"); v != "get" && v != "list" {
			out = append(out, r.String())
		}
	}
	return out
}
