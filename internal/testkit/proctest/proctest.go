// Package proctest runs the module's programs in tests: it builds a main
// package (once per checkout and set of sources, shared by every test
// binary: see Build), starts it, waits for a line it prints
// (its listener's address, say), stops it when the test ends, and keeps
// its output for the failure message. Tests only.
//
// Every wait is on an event (a write, the exit); its bound is a failure
// bound only.
package proctest

import (
	"bytes"
	"io"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// StartBound bounds how long a started program may take to print the line
// Await waits for: a failure bound only.
const StartBound = time.Minute

// Root is the module's root directory.
var Root = func() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}()

// Buffer is a bytes.Buffer safe to read while a process or goroutine
// writes to it, that tells waiters when it grows. The zero value is ready.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
	ch chan struct{}
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ch != nil {
		close(b.ch)
		b.ch = nil
	}
	return b.b.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Bytes returns a copy of what was written so far.
func (b *Buffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.b.Bytes())
}

// Count is how many times sub was written (strings.Count).
func (b *Buffer) Count(sub string) int { return strings.Count(b.String(), sub) }

// Changed is closed at the next Write.
func (b *Buffer) Changed() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ch == nil {
		b.ch = make(chan struct{})
	}
	return b.ch
}

// Proc is a started process.
type Proc struct {
	// Cmd is the command as started.
	Cmd *exec.Cmd
	// Stdout and Stderr collect the process's output: Cmd's own writers
	// when they are Buffers (one for both, say), new ones when they are
	// nil; other writers of Cmd's leave them empty.
	Stdout, Stderr *Buffer

	name   string
	exited chan struct{}
	err    error
}

// Start starts cmd and kills it, if still running, when the test ends;
// a failed test logs its stderr, under name.
func Start(t testing.TB, name string, cmd *exec.Cmd) *Proc {
	t.Helper()
	p := &Proc{Cmd: cmd, Stdout: &Buffer{}, Stderr: &Buffer{}, name: name, exited: make(chan struct{})}
	for _, o := range []struct {
		w   *io.Writer
		buf **Buffer
	}{{&cmd.Stdout, &p.Stdout}, {&cmd.Stderr, &p.Stderr}} {
		if b, ok := (*o.w).(*Buffer); ok {
			*o.buf = b
		} else if *o.w == nil {
			*o.w = *o.buf
		}
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { p.err = cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("stderr of %s:\n%s", p.name, p.Stderr.String())
		}
	})
	return p
}

// Exited is closed once the process has exited.
func (p *Proc) Exited() <-chan struct{} { return p.exited }

// Err is cmd.Wait's error, once Exited is closed.
func (p *Proc) Err() error {
	<-p.exited
	return p.err
}

// Stop kills the process if it is still running and waits for it to exit.
func (p *Proc) Stop() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.Cmd.Process.Kill()
	<-p.exited
}

// Await waits until re matches what the process wrote to out (p.Stdout or
// p.Stderr) and returns the match's submatches. The process exiting
// first, or StartBound passing, fails the test with its stderr.
func (p *Proc) Await(t testing.TB, out *Buffer, re *regexp.Regexp) []string {
	t.Helper()
	bound := time.NewTimer(StartBound)
	defer bound.Stop()
	for {
		changed := out.Changed()
		if m := re.FindStringSubmatch(out.String()); m != nil {
			return m
		}
		select {
		case <-changed:
		case <-p.exited:
			if m := re.FindStringSubmatch(out.String()); m != nil {
				return m
			}
			t.Fatalf("%s exited before printing %s: %v\nstderr:\n%s", p.name, re, p.err, p.Stderr.String())
		case <-bound.C:
			t.Fatalf("%s printed no %s within %s\nstderr:\n%s", p.name, re, StartBound, p.Stderr.String())
		}
	}
}
