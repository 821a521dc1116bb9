package rendezvous_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/weft-hpc/weft/internal/rendezvous"
)

// Four ranks exchange their listen addresses through the store of rank 0.
func Example() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	const token = "job-1234"
	srv := rendezvous.Serve(ln, token, nil) // on rank 0
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const size = 4
	addrs := make([][]string, size)
	var wg sync.WaitGroup
	for rank := range size {
		wg.Add(1)
		go func() { // each goroutine plays one rank
			defer wg.Done()
			c := rendezvous.NewClient(srv.URL(), token)
			if err := c.Put(ctx, fmt.Sprint("addr/", rank), []byte(fmt.Sprintf("10.0.0.%d:7000", rank+1))); err != nil {
				panic(err)
			}
			for peer := range size {
				v, err := c.Get(ctx, fmt.Sprint("addr/", peer))
				if err != nil {
					panic(err)
				}
				addrs[rank] = append(addrs[rank], string(v))
			}
		}()
	}
	wg.Wait()
	fmt.Println(addrs[2])
	// Output: [10.0.0.1:7000 10.0.0.2:7000 10.0.0.3:7000 10.0.0.4:7000]
}
