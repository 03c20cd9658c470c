package group

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// randomTopics returns 1 to 4 topics of 1 to 16 partitions.
func randomTopics(rng *rand.Rand) map[string]int32 {
	partitions := make(map[string]int32)
	for i := range 1 + rng.IntN(4) {
		partitions[fmt.Sprintf("t%d", i)] = int32(1 + rng.IntN(16))
	}
	return partitions
}

// randomSubscription returns every topic (equal) or a random non-empty
// subset of them, sometimes with a topic that does not exist.
func randomSubscription(rng *rand.Rand, partitions map[string]int32, equal bool) []string {
	topics := sortedKeys(partitions)
	if equal {
		return topics
	}
	var out []string
	for _, t := range topics {
		if rng.IntN(2) == 0 {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		out = append(out, topics[rng.IntN(len(topics))])
	}
	if rng.IntN(5) == 0 {
		out = append(out, "missing")
	}
	return out
}

// checkPlan checks what every plan must satisfy: an entry per member,
// partitions only of subscribed, existing topics, none twice; and, when
// complete, every partition of a subscribed topic assigned.
func checkPlan(t *testing.T, members []Member, partitions map[string]int32, plan Plan, complete bool) {
	t.Helper()
	if len(plan) != len(members) {
		t.Fatalf("plan for %d members, want %d: %v", len(plan), len(members), plan)
	}
	owner := make(map[topicPartition]string)
	for _, m := range members {
		a, ok := plan[m.ID]
		if !ok {
			t.Fatalf("no entry for %s", m.ID)
		}
		for topic, ps := range a {
			if !m.subscribes(topic) {
				t.Fatalf("%s got %s, which it does not subscribe to", m.ID, topic)
			}
			for _, p := range ps {
				if p < 0 || p >= partitions[topic] {
					t.Fatalf("%s got %s-%d, which does not exist", m.ID, topic, p)
				}
				tp := topicPartition{topic, p}
				if other, dup := owner[tp]; dup {
					t.Fatalf("%s-%d given to %s and %s", topic, p, other, m.ID)
				}
				owner[tp] = m.ID
			}
		}
	}
	if !complete {
		return
	}
	for _, topic := range subscribedTopics(members, partitions) {
		for p := range partitions[topic] {
			if _, ok := owner[topicPartition{topic, p}]; !ok {
				t.Fatalf("%s-%d assigned to nobody: %v", topic, p, plan)
			}
		}
	}
}

// spread returns the largest and smallest of counts.
func spread(counts []int) (int, int) { return slices.Max(counts), slices.Min(counts) }

// totals returns each member's partition count.
func totals(members []Member, plan Plan) []int {
	counts := make([]int, len(members))
	for i, m := range members {
		counts[i] = plan[m.ID].Count()
	}
	return counts
}

// improvingMove returns a description of a partition that could move to a
// member holding at least two fewer that subscribes to it, "" if none.
func improvingMove(members []Member, plan Plan) string {
	for _, a := range members {
		for _, b := range members {
			if plan[b.ID].Count() > plan[a.ID].Count()-2 {
				continue
			}
			for topic := range plan[a.ID] {
				if b.subscribes(topic) {
					return fmt.Sprintf("%s (%d) could give %s to %s (%d)", a.ID, plan[a.ID].Count(), topic, b.ID, plan[b.ID].Count())
				}
			}
		}
	}
	return ""
}

// TestAssignorProperties runs every assignor on random groups without owned
// partitions: every partition assigned exactly once to a subscriber, and
// with equal subscriptions balanced — per topic for range (its documented
// behaviour), overall for the others; cooperative-sticky leaves no
// improving move even with different subscriptions.
func TestAssignorProperties(t *testing.T) {
	for _, a := range Assignors() {
		t.Run(a.Name(), func(t *testing.T) {
			for seed := range uint64(300) {
				rng := rand.New(rand.NewPCG(seed, 2))
				partitions := randomTopics(rng)
				equal := rng.IntN(2) == 0
				var members []Member
				for i := range 1 + rng.IntN(8) {
					m := sub(fmt.Sprintf("m%d", i), randomSubscription(rng, partitions, equal)...)
					if rng.IntN(3) == 0 {
						m.InstanceID = fmt.Sprintf("i%d", rng.IntN(100))
					}
					members = append(members, m)
				}
				plan := a.Assign(members, partitions)
				checkPlan(t, members, partitions, plan, true)
				if equal {
					counts := totals(members, plan)
					if a.Name() == "range" {
						for topic := range partitions {
							counts = counts[:0]
							for _, m := range members {
								counts = append(counts, len(plan[m.ID][topic]))
							}
							if hi, lo := spread(counts); hi-lo > 1 {
								t.Fatalf("seed %d: %s counts %v", seed, topic, counts)
							}
						}
					} else if hi, lo := spread(counts); hi-lo > 1 {
						t.Fatalf("seed %d: counts %v: %v", seed, counts, plan)
					}
				}
				if a.Cooperative() {
					if move := improvingMove(members, plan); move != "" {
						t.Fatalf("seed %d: unbalanced: %s: %v", seed, move, plan)
					}
				}
			}
		})
	}
}

// minimalRevocations is the fewest partitions that must move to balance a
// group whose members all subscribe to everything and own counts (disjoint,
// existing partitions) of total: the total%n members owning most may keep
// one more than the others.
func minimalRevocations(owned []int, total int) int {
	n := len(owned)
	q, r := total/n, total%n
	sorted := slices.Sorted(slices.Values(owned))
	slices.Reverse(sorted)
	moves := 0
	for k, o := range sorted {
		limit := q
		if k < r {
			limit++
		}
		moves += max(0, o-limit)
	}
	return moves
}

// TestCooperativeStickyRebalances runs random histories of a group — members
// joining and leaving, subscriptions changing, partitions added — through
// cooperative-sticky rebalances, each repeated (as the members' revocations
// trigger) until nothing is revoked. It checks that no partition is ever
// owned by two members, that a partition changes owner only by being
// revoked first, that with equal subscriptions the first round revokes the
// fewest partitions possible and the second completes the move, and that
// each rebalance ends with every partition assigned and nothing left to
// balance.
func TestCooperativeStickyRebalances(t *testing.T) {
	maxRounds := 0
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 3))
		partitions := randomTopics(rng)
		equal := rng.IntN(2) == 0
		subs := make(map[string][]string) // live members' subscriptions
		owned := make(map[string]Assignment)
		next := 0
		var generation int32
		for event := range 30 {
			switch r := rng.IntN(10); {
			case r < 4 || len(subs) == 0:
				next++
				id := fmt.Sprintf("m%02d", next)
				subs[id] = randomSubscription(rng, partitions, equal)
				owned[id] = Assignment{}
			case r < 7:
				ids := sortedKeys(subs)
				id := ids[rng.IntN(len(ids))]
				delete(subs, id)
				delete(owned, id)
			case r < 8:
				topics := sortedKeys(partitions)
				partitions[topics[rng.IntN(len(topics))]] += int32(1 + rng.IntN(4))
			default:
				if !equal {
					ids := sortedKeys(subs)
					id := ids[rng.IntN(len(ids))]
					subs[id] = randomSubscription(rng, partitions, equal)
				}
			}
			for round := 0; len(subs) > 0; round++ {
				generation++
				var members []Member
				var counts []int
				total := 0
				for _, id := range sortedKeys(subs) {
					members = append(members, owning(sub(id, subs[id]...), generation-1, owned[id]))
					counts = append(counts, owned[id].Count())
				}
				for _, topic := range subscribedTopics(members, partitions) {
					total += int(partitions[topic])
				}
				plan := CooperativeSticky().Assign(members, partitions)
				checkPlan(t, members, partitions, plan, false)
				revoked := 0
				for _, m := range members {
					for topic, ps := range plan[m.ID] {
						for _, p := range ps {
							for other, o := range owned {
								if other != m.ID && o.Has(topic, p) {
									t.Fatalf("seed %d event %d: %s-%d given to %s while %s owns it", seed, event, topic, p, m.ID, other)
								}
							}
						}
					}
					for topic, ps := range owned[m.ID] {
						for _, p := range ps {
							if !plan[m.ID].Has(topic, p) {
								revoked++
							}
						}
					}
				}
				if equal && round == 0 {
					if want := minimalRevocations(counts, total); revoked != want {
						t.Fatalf("seed %d event %d: %d partitions revoked, the fewest possible is %d (owned %v of %d)",
							seed, event, revoked, want, counts, total)
					}
				}
				for id := range owned {
					owned[id] = plan[id]
				}
				if revoked == 0 {
					checkPlan(t, members, partitions, plan, true)
					if move := improvingMove(members, plan); move != "" {
						t.Fatalf("seed %d event %d: unbalanced after %d rounds: %s", seed, event, round+1, move)
					}
					if hi, lo := spread(totals(members, plan)); equal && hi-lo > 1 {
						t.Fatalf("seed %d event %d: counts %v", seed, event, totals(members, plan))
					}
					maxRounds = max(maxRounds, round+1)
					break
				}
				if equal && round > 0 || round > 5 {
					t.Fatalf("seed %d event %d: still revoking in round %d", seed, event, round+1)
				}
			}
		}
	}
	t.Logf("rebalances took at most %d rounds", maxRounds)
}

// TestCooperativeStickyFourthMember is the example: three members
// with 12 partitions, a fourth joins; exactly three partitions move, each
// revoked in the first rebalance and assigned in the second.
func TestCooperativeStickyFourthMember(t *testing.T) {
	partitions := map[string]int32{"orders": 12}
	members := []Member{sub("a", "orders"), sub("b", "orders"), sub("c", "orders")}
	plan := CooperativeSticky().Assign(members, partitions)
	if got := totals(members, plan); !slices.Equal(got, []int{4, 4, 4}) {
		t.Fatalf("initial counts %v", got)
	}
	withOwned := func(ms []Member, plan Plan, gen int32) []Member {
		out := make([]Member, len(ms))
		for i, m := range ms {
			out[i] = owning(m, gen, plan[m.ID])
		}
		return out
	}
	members = append(withOwned(members, plan, 1), sub("d", "orders"))
	first := CooperativeSticky().Assign(members, partitions)
	revoked := 0
	for _, m := range members {
		if n := m.Subscription.Owned.Count() - first[m.ID].Count(); m.ID != "d" && n != 1 {
			t.Errorf("%s gives up %d partitions, want 1", m.ID, n)
		} else {
			revoked += n
		}
		for topic, ps := range first[m.ID] {
			for _, p := range ps {
				if !m.Subscription.Owned.Has(topic, p) {
					t.Errorf("first rebalance gives %s %s-%d, which it did not own", m.ID, topic, p)
				}
			}
		}
	}
	if revoked != 3 || first["d"].Count() != 0 {
		t.Fatalf("first rebalance: %d revoked, d gets %v", revoked, first["d"])
	}
	second := CooperativeSticky().Assign(withOwned(members, first, 2), partitions)
	if got := totals(members, second); !slices.Equal(got, []int{3, 3, 3, 3}) {
		t.Fatalf("second rebalance counts %v", got)
	}
	for _, m := range members[:3] {
		if !slices.Equal(second[m.ID]["orders"], first[m.ID]["orders"]) {
			t.Errorf("%s: %v in the second rebalance, %v in the first", m.ID, second[m.ID], first[m.ID])
		}
	}
}
