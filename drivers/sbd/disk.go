package sbd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// disk is one SBD device, opened for sector reads and writes. A block
// device is opened as sbd opens it, O_DIRECT and O_SYNC, so that what
// another host's sbd wrote (bypassing the page cache) is read from the
// disk and what is written reaches it. A regular file (an SBD device on a
// shared file system, ReadWriteMany, as medik8s' storage-based
// remediation keeps it) is opened the same way: without direct I/O, a
// host would read another's message from its own page cache, late or
// never, and a file system that does not honour it is refused
// (ErrNoDirectIO), nothing written. Every operation runs in its own
// goroutine bounded by the caller's context: a read of a dead SAN path can
// hang in the kernel, and the caller must hear of it in time (the
// operation's goroutine ends when the kernel gives up).
type disk struct {
	path       string
	f          *os.File
	sectorSize int
	mu         sync.Mutex // one I/O at a time: the buffer is shared
	buf        []byte     // one sector, aligned for O_DIRECT
	id         fileID     // what was opened, to tell when path names another
}

// fileID tells one file (or device node) from another: a file replaced at
// its path (a restore, a copy renamed over it, a symbolic link of
// /dev/disk/by-id pointed at another disk) has another.
type fileID struct{ dev, ino, rdev uint64 }

func idOf(st os.FileInfo) (fileID, bool) {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{dev: uint64(sys.Dev), ino: sys.Ino, rdev: uint64(sys.Rdev)}, true
}

// replaced reports whether the disk's path names another file than the one
// opened, or none: what is written there now is not what this disk reads.
func (d *disk) replaced() (bool, error) {
	st, err := os.Stat(d.path)
	if err != nil {
		return true, fmt.Errorf("%w: %s: %w", ErrIO, d.path, err)
	}
	id, ok := idOf(st)
	return ok && id != d.id, nil
}

// current returns an error when the disk's path names another file than
// the one opened: a message written to this one, or read from it, says
// nothing of what stands at the path, which the node's watcher reads.
func (d *disk) current() error {
	moved, err := d.replaced()
	switch {
	case err != nil:
		return err
	case moved:
		return fmt.Errorf("%w: %s was replaced since it was opened (a restore, a copy renamed over it, a link pointed elsewhere): open it again", ErrIO, d.path)
	}
	return nil
}

// ErrIO wraps the errors of reading or writing a device.
var ErrIO = errors.New("sbd device I/O failed")

// ErrNoDirectIO means an SBD file is on a file system that does not honour
// direct I/O (O_DIRECT): another host's message would be read from this
// host's page cache.
var ErrNoDirectIO = errors.New("the file system does not honour direct I/O (O_DIRECT), which a shared SBD file needs: another host's message would be read from this host's page cache")

// openFile opens a device; a test replaces it.
var openFile = os.OpenFile

// openDisk opens path for reading and writing.
func openDisk(path string) (*disk, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrIO, path, err)
	}
	block := st.Mode()&os.ModeDevice != 0 && st.Mode()&os.ModeCharDevice == 0
	if !block && !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is neither a block device nor a regular file", ErrIO, path)
	}
	f, err := openFile(path, os.O_RDWR|unix.O_SYNC|unix.O_DIRECT, 0)
	if errors.Is(err, unix.EINVAL) && !block {
		return nil, fmt.Errorf("%w: %s: %w", ErrIO, path, ErrNoDirectIO)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: opening %s: %w", ErrIO, path, err)
	}
	size := 512
	if block {
		n, err := unix.IoctlGetInt(int(f.Fd()), unix.BLKSSZGET)
		if err != nil || n <= 0 {
			f.Close()
			return nil, fmt.Errorf("%w: %s: reading its sector size: %v", ErrIO, path, err)
		}
		size = n
	}
	dk := &disk{path: path, f: f, sectorSize: size, buf: aligned(size)}
	if st, err := f.Stat(); err == nil {
		dk.id, _ = idOf(st)
	}
	return dk, nil
}

// aligned returns a buffer of n bytes aligned to 4096, as O_DIRECT needs.
func aligned(n int) []byte {
	const align = 4096
	b := make([]byte, n+align)
	off := 0
	if r := int(uintptr(unsafe.Pointer(&b[0])) % align); r != 0 {
		off = align - r
	}
	return b[off : off+n : off+n]
}

func (d *disk) close() error { return d.f.Close() }

// io runs op under ctx: it returns ctx's error when ctx ends first (the
// operation goes on in the background, holding the disk until the kernel
// returns), else op's result.
func (d *disk) io(ctx context.Context, op func() ([]byte, error)) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		if err := ctx.Err(); err != nil {
			// Its caller gave up while it waited for the disk: a write
			// must not land later, after what the caller did next.
			done <- result{nil, fmt.Errorf("%w: %s: %w", ErrIO, d.path, err)}
			return
		}
		b, err := op()
		done <- result{b, err}
	}()
	select {
	case r := <-done:
		return r.b, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %s: %w", ErrIO, d.path, ctx.Err())
	}
}

// read reads sector n into a new slice.
func (d *disk) read(ctx context.Context, n int64) ([]byte, error) {
	return d.io(ctx, func() ([]byte, error) {
		if _, err := d.f.ReadAt(d.buf, n*int64(d.sectorSize)); err != nil {
			return nil, fmt.Errorf("%w: %s: reading sector %d: %w", ErrIO, d.path, n, err)
		}
		return bytes.Clone(d.buf), nil
	})
}

// write writes b (one sector) at sector n and reads it back: the write
// counts only when the disk holds it (as sbd's mbox_write_verify).
func (d *disk) write(ctx context.Context, n int64, b []byte) error {
	_, err := d.io(ctx, func() ([]byte, error) {
		copy(d.buf, b)
		if _, err := d.f.WriteAt(d.buf, n*int64(d.sectorSize)); err != nil {
			return nil, fmt.Errorf("%w: %s: writing sector %d: %w", ErrIO, d.path, n, err)
		}
		clear(d.buf)
		if _, err := d.f.ReadAt(d.buf, n*int64(d.sectorSize)); err != nil {
			return nil, fmt.Errorf("%w: %s: reading sector %d back: %w", ErrIO, d.path, n, err)
		}
		if !bytes.Equal(d.buf, b) {
			return nil, fmt.Errorf("%w: %s: sector %d does not read back as written", ErrIO, d.path, n)
		}
		return nil, nil
	})
	return err
}

// header reads and checks the header.
func (d *disk) header(ctx context.Context) (Header, error) {
	b, err := d.read(ctx, 0)
	if err != nil {
		return Header{}, err
	}
	h, err := decodeHeader(b, d.sectorSize)
	if err != nil {
		return Header{}, fmt.Errorf("%s: %w", d.path, err)
	}
	return h, nil
}

// lookup returns the slot of node (names compare without case, as sbd's),
// -1 when it has none.
func (d *disk) lookup(ctx context.Context, h Header, node string) (int, error) {
	for i := range h.Slots {
		b, err := d.read(ctx, nodeSector(i))
		if err != nil {
			return -1, err
		}
		if name, used := slotName(b); used && strings.EqualFold(name, node) {
			return i, nil
		}
	}
	return -1, nil
}

// slots returns the names of the used slots, by slot.
func (d *disk) slots(ctx context.Context, h Header) (map[int]string, error) {
	out := map[int]string{}
	for i := range h.Slots {
		b, err := d.read(ctx, nodeSector(i))
		if err != nil {
			return nil, err
		}
		if name, used := slotName(b); used {
			out[i] = name
		}
	}
	return out, nil
}

func (d *disk) mailbox(ctx context.Context, slot int) (Mailbox, error) {
	box, _, err := d.mailboxStamped(ctx, slot)
	return box, err
}

// mailboxStamped reads a mailbox and the stamp fencekit wrote on it (zero
// when none).
func (d *disk) mailboxStamped(ctx context.Context, slot int) (Mailbox, written, error) {
	b, err := d.read(ctx, mailboxSector(slot))
	if err != nil {
		return Mailbox{}, written{}, err
	}
	return decodeMailbox(b), stamp(b), nil
}

// writeStamped writes a mailbox with its stamp.
func (d *disk) writeStamped(ctx context.Context, slot int, m Mailbox, w written) error {
	b := make([]byte, d.sectorSize)
	m.encodeStamped(b, w)
	return d.write(ctx, mailboxSector(slot), b)
}

func (d *disk) writeMailbox(ctx context.Context, slot int, m Mailbox) error {
	b := make([]byte, d.sectorSize)
	m.encode(b)
	return d.write(ctx, mailboxSector(slot), b)
}
