//go:build cgo

package hdf5_test

import (
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/weft-hpc/weft/hdf5"
)

// A 2-D float32 dataset, chunked and compressed, with an attribute:
// written, described and read back by a row range.
func Example() {
	dir, err := os.MkdirTemp("", "hdf5-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	f, err := hdf5.Create(filepath.Join(dir, "x.h5"))
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()

	const name = "/data/x"
	if err := f.CreateDataset(name, hdf5.Float32, 4, 2, hdf5.DatasetOptions{ChunkRows: 2, Deflate: 1}); err != nil {
		log.Fatal(err)
	}
	if err := hdf5.WriteRows(f, name, 0, []float32{0, 1, 10, 11, 20, 21, 30, 31}); err != nil {
		log.Fatal(err)
	}
	if err := f.SetAttr(name, "unit", "metres"); err != nil {
		log.Fatal(err)
	}

	info, err := f.Stat(name)
	if err != nil {
		log.Fatal(err)
	}
	rows := make([]float32, 2*2)
	if err := hdf5.ReadRows(f, name, 1, 2, rows); err != nil {
		log.Fatal(err)
	}
	unit, _ := f.Attr(name, "unit")
	members, _ := f.Members("/data")
	fmt.Println(info.Type, info.Shape(), "chunks of", info.ChunkRows, "rows, deflate", info.Deflate)
	fmt.Println("rows 1..2:", rows, "unit:", unit, "members of /data:", members)
	_, err = f.Attr(name, "scale")
	fmt.Println("missing attribute:", errors.Is(err, hdf5.ErrNotFound))
	// Output:
	// float32 [4 x 2] chunks of 2 rows, deflate 1
	// rows 1..2: [10 11 20 21] unit: metres members of /data: [x]
	// missing attribute: true
}
