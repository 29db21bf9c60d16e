package ask_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/askbi/askbi/ask"
)

// BenchmarkTurn measures the orchestrator's own cost per turn: "show
// signups by week" on the mock provider, three tool calls (search,
// preview, chart) over an in-memory source and stores, so data and model
// time are near zero. It reports the median turn as p50-ns.
//
//	go test -run '^$' -bench Turn -benchmem ./ask
func BenchmarkTurn(b *testing.B) {
	e := newEnv(b, nil)
	ctx := context.Background()
	var times []time.Duration
	for b.Loop() {
		b.StopTimer()
		conv, err := e.a.CreateConversation(ctx, alice)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		if err := e.a.Send(ctx, alice, ask.SendRequest{ConversationID: conv.ID, Message: "show signups by week"}, nil); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(start))
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Nanoseconds()), "p50-ns")
}
