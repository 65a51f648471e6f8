// Command overhead measures the cost of one command call through the Go
// binding against the same call from C, in one run: EWSUM on two 1-element
// float32 tensors, n calls per round, the median of several rounds each.
//
//	bindings/go/bench.sh BUILD_DIR   (or go run ./cmd/overhead with CGO_* set)
package main

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"testing"
	"time"

	"nnc"
	"nnc/internal/cref"
)

func median(v []float64) float64 {
	sort.Float64s(v)
	return v[len(v)/2]
}

func main() {
	n := flag.Int("n", 1000000, "calls per round")
	rounds := flag.Int("rounds", 7, "rounds")
	flag.Parse()
	a, _ := nnc.FromFloat32([]float32{1}, 1)
	b, _ := nnc.FromFloat32([]float32{2}, 1)
	c, _ := nnc.NewTensor(nnc.Float32, nnc.NHWC, 1)
	defer a.Close()
	defer b.Close()
	defer c.Close()
	cmd := nnc.EWSum()
	in, out := []*nnc.Tensor{a, b}, []*nnc.Tensor{c}
	var cNs, goNs []float64
	for r := 0; r < *rounds; r++ {
		cNs = append(cNs, cref.EWSumNs(*n))
		start := time.Now()
		for i := 0; i < *n; i++ {
			if err := nnc.Exec(cmd, nnc.NoHint, in, out); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		}
		goNs = append(goNs, float64(time.Since(start).Nanoseconds())/float64(*n))
	}
	v, _ := c.Float32s()
	if v[0] != 3 {
		fmt.Fprintln(os.Stderr, "wrong sum", v[0])
		os.Exit(1)
	}
	allocs := testing.AllocsPerRun(1000, func() { _ = nnc.Exec(cmd, nnc.NoHint, in, out) })
	cm, gm := median(cNs), median(goNs)
	fmt.Printf("EWSUM on 1-element float32 tensors, %d calls x %d rounds (median)\n", *n, *rounds)
	fmt.Printf("  C (ccv_nnc_cmd_exec)   %7.1f ns/call\n", cm)
	fmt.Printf("  Go (nnc.Exec)          %7.1f ns/call   %.2fx C, %.0f allocations/call\n", gm, gm/cm, allocs)
}
