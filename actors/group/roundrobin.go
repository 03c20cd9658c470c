// roundrobin.go holds the "roundrobin" assignor (Kafka's
// RoundRobinAssignor): all partitions of all subscribed topics, sorted by
// topic and partition, are dealt one at a time to the members in Kafka's
// member order, skipping members not subscribed to the partition's topic.
// Eager.

package group

// RoundRobin returns the "roundrobin" assignor.
func RoundRobin() Assignor { return roundRobinAssignor{} }

type roundRobinAssignor struct{}

func (roundRobinAssignor) Name() string      { return "roundrobin" }
func (roundRobinAssignor) Cooperative() bool { return false }

func (roundRobinAssignor) Assign(members []Member, partitions map[string]int32) Plan {
	plan := newPlan(members)
	sorted := sortMembers(members)
	next := 0
	for _, topic := range subscribedTopics(members, partitions) {
		for p := range partitions[topic] {
			// Some member subscribes to topic, so this ends.
			for !sorted[next].subscribes(topic) {
				next = (next + 1) % len(sorted)
			}
			m := sorted[next]
			plan[m.ID][topic] = append(plan[m.ID][topic], p)
			next = (next + 1) % len(sorted)
		}
	}
	return plan
}
