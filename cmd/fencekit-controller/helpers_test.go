package main

import (
	"bytes"
	"sync"
)

// syncBuffer is a bytes.Buffer safe for concurrent use: logs are written
// from many goroutines, some of them after the test that made them ended.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
