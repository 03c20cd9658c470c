// fanout.go holds the helper the data handlers use to ask the DataBackend
// about many partitions at once and answer when all have answered.

package kafka

import (
	"context"
	"sync"
)

// fanOut calls fn(ctx, i) for every i in [0, n) concurrently and returns
// once all have returned: the first error by index, if any. One call runs
// on the caller's goroutine.
func fanOut(ctx context.Context, n int, fn func(ctx context.Context, i int) error) error {
	if n == 1 {
		return fn(ctx, 0)
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	wg.Add(n)
	for i := range n {
		go func() {
			defer wg.Done()
			errs[i] = fn(ctx, i)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
