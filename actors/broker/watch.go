// watch.go: the broker follows the cluster metadata. A goroutine lists
// the topics and hosts in etcd, posts a snapshot to the broker's mailbox,
// then posts every change the watches report (starting over with a new
// snapshot when a watch fails, e.g. after a compaction). The broker keeps
// them as its metadata cache (answering from it: metadata.go) and
// reconciles its replicas with each change (replicas.go). Topic records
// that fail validation are never posted: a topic whose record went bad
// runs on as it was.

package broker

import (
	"context"
	"maps"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/actorlog/actorlog/cluster"
	"github.com/actorlog/actorlog/messages"
)

// follow lists the metadata, posts a snapshot, then posts every change; on
// a watch failure (e.g. compaction) it starts over with a new snapshot.
func (b *Broker) follow(ctx context.Context, post func(any)) {
	for ctx.Err() == nil {
		snap, err := b.cfg.Store.Snapshot(ctx)
		if err != nil {
			if ctx.Err() == nil {
				b.logger.WithError(err).Warn("listing metadata failed; retrying")
				cluster.SleepCtx(ctx, time.Second)
			}
			continue
		}
		rejected := map[string]bool{}
		for _, r := range snap.Rejected {
			rejected[r.Name] = true
		}
		post(metadataSnapshot{topics: snap.Topics, hosts: snap.Hosts, rejected: rejected})
		tch := b.cfg.Store.WatchTopics(ctx, snap.Revision)
		hch := b.cfg.Store.WatchHosts(ctx, snap.Revision)
		b.relay(ctx, tch, hch, post)
	}
}

func (b *Broker) relay(ctx context.Context, tch <-chan cluster.TopicEvent, hch <-chan cluster.HostEvent, post func(any)) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-tch:
			if !ok || ev.Err != nil {
				if ctx.Err() == nil {
					b.logger.WithError(ev.Err).Warn("topic watch ended; re-listing")
				}
				return
			}
			switch {
			case ev.Rejected != nil || cluster.ValidateTopicName(ev.Name) != nil:
				// An invalid record (the Store logged it): never acted
				// on. A topic whose record went bad runs on as it was.
			case ev.Type == cluster.EventDelete:
				post(topicChanged{name: ev.Name})
			default:
				post(topicChanged{name: ev.Name, topic: ev.Topic})
			}
		case ev, ok := <-hch:
			if !ok || ev.Err != nil {
				if ctx.Err() == nil {
					b.logger.WithError(ev.Err).Warn("host watch ended; re-listing")
				}
				return
			}
			if ev.Type == cluster.EventDelete {
				post(hostChanged{id: ev.HostID})
			} else {
				post(hostChanged{id: ev.HostID, host: ev.Host})
			}
		}
	}
}

func (b *Broker) onSnapshot(ctx actor.Context, s metadataSnapshot) {
	old := maps.Clone(b.topics)
	known := map[string]bool{}
	for _, t := range s.topics {
		known[t.Name] = true
		b.topics[t.Name] = t
	}
	for name := range s.rejected {
		known[name] = true // a topic whose record went bad runs on as it was
	}
	for name := range b.topics {
		if !known[name] {
			delete(b.topics, name)
		}
	}
	b.hosts = map[int32]*messages.HostInfo{}
	for _, h := range s.hosts {
		b.hosts[h.HostId] = h
	}
	if !b.synced {
		b.synced = true
		self, topics, rejected, w := b.cfg.HostID, maps.Clone(b.topics), s.rejected, b.dirs
		w.do(func() { w.removeStrays(self, topics, rejected) })
	}
	b.reconcile(ctx)
	b.updateCoordinatorTopics(ctx)
	// A watch that started over may have missed host changes too.
	b.sendLiveHosts(ctx)
	// A watch that started over may have missed a reassignment away.
	for name, t := range b.topics {
		if o := old[name]; o != nil && o.TopicId == t.TopicId {
			b.apply(ctx, leftPartitions(b.cfg.HostID, o, t, b.replicas, b.stopping))
		}
	}
}

func (b *Broker) onTopicChanged(ctx actor.Context, m topicChanged) {
	old := b.topics[m.name]
	if m.topic == nil {
		delete(b.topics, m.name)
	} else {
		b.topics[m.name] = m.topic
	}
	b.reconcile(ctx)
	b.updateCoordinatorTopics(ctx)
	if old != nil && m.topic != nil && old.TopicId == m.topic.TopicId {
		b.apply(ctx, leftPartitions(b.cfg.HostID, old, m.topic, b.replicas, b.stopping))
	}
}

func (b *Broker) onHostChanged(ctx actor.Context, m hostChanged) {
	if m.host == nil {
		delete(b.hosts, m.id)
	} else {
		b.hosts[m.id] = m.host
	}
	// Followers of a leader whose host just became known can start now,
	// and leaders stop waiting for followers on hosts that went.
	b.reconcile(ctx)
	b.sendLiveHosts(ctx)
}
