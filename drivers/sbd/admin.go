package sbd

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
)

// Create writes a new SBD header (h, its sector size the device's) and
// clears every slot and mailbox, as sbd -d DEV create does. It overwrites
// what the device held: run it only on a device no node watches.
func Create(ctx context.Context, path string, h Header) error {
	dk, err := openDisk(path)
	if err != nil {
		return err
	}
	defer dk.close()
	h.SectorSize = dk.sectorSize
	if h.MinorVersion == 0 {
		h.MinorVersion = 1
	}
	if h.UUID == [16]byte{} {
		_, _ = rand.Read(h.UUID[:])
		h.UUID[6] = h.UUID[6]&0x0f | 0x40 // a version 4 UUID, as uuid_generate makes
		h.UUID[8] = h.UUID[8]&0x3f | 0x80
	}
	if err := h.validate(); err != nil {
		return err
	}
	b := make([]byte, dk.sectorSize)
	h.encode(b)
	if err := dk.write(ctx, 0, b); err != nil {
		return err
	}
	zero := make([]byte, dk.sectorSize)
	for i := range h.Slots {
		if err := dk.write(ctx, nodeSector(i), zero); err != nil {
			return err
		}
		if err := dk.write(ctx, mailboxSector(i), zero); err != nil {
			return err
		}
	}
	return nil
}

// ReadHeader reads a device's header.
func ReadHeader(ctx context.Context, path string) (Header, error) {
	dk, err := openDisk(path)
	if err != nil {
		return Header{}, err
	}
	defer dk.close()
	return dk.header(ctx)
}

// Allocate gives node a slot on the device, unless it has one (as
// sbd -d DEV allocate NODE), and returns the slot.
func Allocate(ctx context.Context, path, node string) (int, error) {
	if node == "" || len(node) > nameMax || strings.ContainsRune(node, 0) {
		return -1, fmt.Errorf("sbd: %q is not a node name (1 to %d bytes)", node, nameMax)
	}
	dk, err := openDisk(path)
	if err != nil {
		return -1, err
	}
	defer dk.close()
	return allocate(ctx, dk, node)
}

func allocate(ctx context.Context, dk *disk, node string) (int, error) {
	h, err := dk.header(ctx)
	if err != nil {
		return -1, err
	}
	if slot, err := dk.lookup(ctx, h, node); err != nil || slot >= 0 {
		return slot, err
	}
	for i := range h.Slots {
		b, err := dk.read(ctx, nodeSector(i))
		if err != nil {
			return -1, err
		}
		if _, used := slotName(b); used {
			continue
		}
		encodeSlot(b, node)
		if err := dk.write(ctx, nodeSector(i), b); err != nil {
			return -1, err
		}
		return i, nil
	}
	return -1, fmt.Errorf("sbd: %s: no free slot for %q", dk.path, node)
}

// SendMessage writes message m from from into node's mailbox on the
// device, read back, as sbd -d DEV message NODE MSG does (without its wait
// for msgwait).
func SendMessage(ctx context.Context, path, node string, m Message, from string) error {
	dk, err := openDisk(path)
	if err != nil {
		return err
	}
	defer dk.close()
	h, err := dk.header(ctx)
	if err != nil {
		return err
	}
	slot, err := dk.lookup(ctx, h, node)
	if err != nil {
		return err
	}
	if slot < 0 {
		return fmt.Errorf("%w: %s has no slot for %q", ErrNoSlot, path, node)
	}
	return dk.writeMailbox(ctx, slot, Mailbox{Message: m, From: from})
}
