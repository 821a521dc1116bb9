package rendezvous_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/weft-hpc/weft/internal/rendezvous"
)

// Four ranks join the world of rank 0's store and read each other's
// listen addresses.
func Example() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	const token, size = "job-1234", 4
	srv := rendezvous.Serve(ln, rendezvous.Config{Token: token, Size: size}) // on rank 0
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	addrs := make([][]string, size)
	var wg sync.WaitGroup
	for rank := range size {
		wg.Add(1)
		go func() { // each goroutine plays one rank
			defer wg.Done()
			c := rendezvous.NewClient(srv.URL(), token)
			me := rendezvous.Member{Rank: rank, Size: size, RankVar: "WEFT_RANK", SizeVar: "WEFT_WORLD_SIZE",
				Who: fmt.Sprint("goroutine ", rank), Info: []byte(fmt.Sprintf("10.0.0.%d:7000", rank+1))}
			if _, err := c.Join(ctx, me); err != nil {
				panic(err)
			}
			for peer := range size {
				v, err := c.Get(ctx, rendezvous.RankKey(peer))
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
