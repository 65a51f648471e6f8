package nnc

import (
	"errors"
	"testing"
)

func TestTensorRoundTrip(t *testing.T) {
	data := []float32{1, 2, 3, 4, 5, 6}
	x, err := FromFloat32(data, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if s := x.Shape(); len(s) != 2 || s[0] != 2 || s[1] != 3 {
		t.Fatalf("shape %v", s)
	}
	got, err := x.CopyFloat32s()
	if err != nil {
		t.Fatal(err)
	}
	for i := range data {
		if got[i] != data[i] {
			t.Fatalf("element %d: %v != %v", i, got[i], data[i])
		}
	}
}

func TestTensorBadShape(t *testing.T) {
	_, err := NewTensor(Float32, NHWC, 2, -1)
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("want ErrInvalid, got %v", err)
	}
}
