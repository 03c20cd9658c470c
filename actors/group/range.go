// range.go holds the "range" assignor (Kafka's RangeAssignor): topic by
// topic, the partitions are cut into consecutive ranges, one per subscribed
// member in Kafka's member order, the first members getting one extra when
// the count does not divide. Eager.

package group

// Range returns the "range" assignor.
func Range() Assignor { return rangeAssignor{} }

type rangeAssignor struct{}

func (rangeAssignor) Name() string      { return "range" }
func (rangeAssignor) Cooperative() bool { return false }

func (rangeAssignor) Assign(members []Member, partitions map[string]int32) Plan {
	plan := newPlan(members)
	sorted := sortMembers(members)
	for _, topic := range subscribedTopics(members, partitions) {
		var subs []Member
		for _, m := range sorted {
			if m.subscribes(topic) {
				subs = append(subs, m)
			}
		}
		n, c := int(partitions[topic]), len(subs)
		per, extra := n/c, n%c
		for i, m := range subs {
			start, length := i*per+min(i, extra), per
			if i < extra {
				length++
			}
			for p := start; p < start+length; p++ {
				plan[m.ID][topic] = append(plan[m.ID][topic], int32(p))
			}
		}
	}
	return plan
}
