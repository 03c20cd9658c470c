// watch.go holds the watches of topics and host registrations: a stream of
// decoded put/delete events that starts right after a revision the caller
// has already seen (a list's or snapshot's revision, or the last event's),
// so list-then-watch misses nothing and repeats nothing. When the watch
// cannot go on (the revision was compacted, the member lost its raft
// leader, the client closed), a final event carries the error and the
// channel closes: the caller lists again and watches from the new revision.

package cluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/sirupsen/logrus"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/actorlog/actorlog/messages"
)

// EventType says what happened to a key.
type EventType int

const (
	// EventPut: the key was created or replaced.
	EventPut EventType = iota + 1
	// EventDelete: the key was deleted (or its lease expired).
	EventDelete
)

// String returns "put" or "delete".
func (t EventType) String() string {
	switch t {
	case EventPut:
		return "put"
	case EventDelete:
		return "delete"
	}
	return fmt.Sprintf("EventType(%d)", int(t))
}

// TopicEvent is one change of a topic, or the end of the watch.
type TopicEvent struct {
	// Type is EventPut or EventDelete; zero when Err is set.
	Type EventType
	// Name is the topic's name, as the key holds it: when Rejected is
	// set, it may be any string.
	Name string
	// Topic is the new value for a put; for a delete, the value it had
	// when etcd still knows it and it was valid (nil otherwise). Nil when
	// Rejected is set.
	Topic *messages.TopicMetadata
	// Rejected, on a put, says why the new value is not a valid topic
	// record (it wraps ErrCorruptMetadata; the Store has logged it): the
	// record must not be acted on. The watch goes on.
	Rejected error
	// Revision is the store revision of the change. Watching from it
	// resumes after this event; it is also a valid expected revision for
	// UpdateTopic after a put.
	Revision int64
	// Err, when set, ends the watch: it is the last event and the channel
	// closes after it. It wraps ErrCompacted or ErrWatchEnded (a bad
	// record does not end the watch: see Rejected).
	Err error
}

// HostEvent is one change of a host registration, or the end of the watch.
type HostEvent struct {
	// Type is EventPut (registered or re-registered) or EventDelete
	// (closed, or its lease expired); zero when Err is set.
	Type EventType
	// HostID is the host's id.
	HostID int32
	// Host is the registration for a put; for a delete, the registration
	// that went away when etcd still knows it (nil otherwise), whose
	// BrokerEpoch tells which registration ended.
	Host *messages.HostInfo
	// Revision is the store revision of the change; watching from it
	// resumes after this event.
	Revision int64
	// Err, when set, ends the watch, as TopicEvent.Err.
	Err error
}

// WatchTopics streams the changes of all topics made after fromRevision,
// in revision order, until ctx ends (the
// channel then closes without an error event) or the watch fails (a final
// event with Err, then close). The caller must keep reading until the
// channel closes or cancel ctx; events are not dropped.
//
// fromRevision <= 0 means "from when etcd sets the watch up", some time
// after WatchTopics returns: changes made meanwhile are missed. Pass a
// revision (ListTopics', Snapshot's, an event's) when that matters.
func (s *Store) WatchTopics(ctx context.Context, fromRevision int64) <-chan TopicEvent {
	out := make(chan TopicEvent, 16)
	go func() {
		defer close(out)
		send := func(ev TopicEvent) bool {
			select {
			case out <- ev:
				return true
			case <-ctx.Done():
				return false
			}
		}
		err := s.watch(ctx, s.keys.Topics(), fromRevision, func(ev *clientv3.Event) (bool, error) {
			var te TopicEvent
			var err error
			te.Revision = ev.Kv.ModRevision
			te.Name, err = s.keys.topicFromKey(string(ev.Kv.Key))
			if err != nil {
				return false, err
			}
			switch ev.Type {
			case mvccpb.PUT:
				te.Type = EventPut
				if te.Topic, err = s.decodeTopic(ev.Kv); err != nil {
					te.Rejected = s.reject(ev.Kv, err).Err
				}
			case mvccpb.DELETE:
				te.Type = EventDelete
				if ev.PrevKv != nil {
					// An invalid previous value was never a topic.
					te.Topic, _ = s.decodeTopic(ev.PrevKv)
				}
			}
			return send(te), nil
		})
		if err != nil {
			send(TopicEvent{Err: fmt.Errorf("cluster: watch topics: %w", err)})
		}
	}()
	return out
}

// WatchHosts streams the changes of host registrations made after
// fromRevision, with the same rules as WatchTopics (including those for
// fromRevision <= 0). A registration that cannot be read is no
// registration, as in ListHosts: a put of one comes as an EventDelete
// (Host nil), and a key that names no host id is skipped; both are logged
// once.
func (s *Store) WatchHosts(ctx context.Context, fromRevision int64) <-chan HostEvent {
	out := make(chan HostEvent, 16)
	go func() {
		defer close(out)
		send := func(ev HostEvent) bool {
			select {
			case out <- ev:
				return true
			case <-ctx.Done():
				return false
			}
		}
		err := s.watch(ctx, s.keys.Hosts(), fromRevision, func(ev *clientv3.Event) (bool, error) {
			var he HostEvent
			var err error
			he.Revision = ev.Kv.ModRevision
			if he.HostID, err = s.keys.hostIDFromKey(string(ev.Kv.Key)); err != nil {
				s.rejects.report(s.logger, string(ev.Kv.Key), ev.Kv.ModRevision, err)
				return true, nil
			}
			switch ev.Type {
			case mvccpb.PUT:
				he.Type = EventPut
				if he.Host, err = s.decodeHost(ev.Kv); err != nil {
					s.rejects.report(s.logger, string(ev.Kv.Key), ev.Kv.ModRevision, err)
					he.Type, he.Host = EventDelete, nil
				}
			case mvccpb.DELETE:
				he.Type = EventDelete
				if ev.PrevKv != nil {
					he.Host, _ = s.decodeHost(ev.PrevKv)
				}
			}
			return send(he), nil
		})
		if err != nil {
			send(HostEvent{Err: fmt.Errorf("cluster: watch hosts: %w", err)})
		}
	}()
	return out
}

// watch runs one etcd watch on prefix from fromRevision+1 and hands each
// event to handle, which returns false to stop (ctx ended) or an error to
// fail. It returns nil when ctx ended, else why the watch cannot go on.
func (s *Store) watch(ctx context.Context, prefix string, fromRevision int64, handle func(*clientv3.Event) (bool, error)) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	opts := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithPrevKV()}
	if fromRevision > 0 {
		opts = append(opts, clientv3.WithRev(fromRevision+1))
	}
	log := s.logger.WithFields(logrus.Fields{"watch_prefix": prefix, "from_revision": fromRevision})
	// WithRequireLeader: a member cut off from its raft quorum ends the
	// watch (ErrNoLeader) instead of going silent.
	wch := s.client.Watch(clientv3.WithRequireLeader(wctx), prefix, opts...)
	last := fromRevision
	for {
		select {
		case <-ctx.Done():
			return nil
		case resp, ok := <-wch:
			if !ok {
				if ctx.Err() != nil {
					return nil
				}
				log.WithField("last_revision", last).Warn("watch channel closed")
				return fmt.Errorf("%w: channel closed after revision %d", ErrWatchEnded, last)
			}
			if resp.CompactRevision != 0 || errors.Is(resp.Err(), rpctypes.ErrCompacted) {
				log.WithField("compact_revision", resp.CompactRevision).Warn("watch revision compacted; caller must re-list")
				return fmt.Errorf("%w: from revision %d, compacted up to %d: %v", ErrCompacted, fromRevision, resp.CompactRevision, resp.Err())
			}
			if err := resp.Err(); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				log.WithError(err).WithField("last_revision", last).Warn("watch failed")
				return fmt.Errorf("%w: after revision %d: %v", ErrWatchEnded, last, err)
			}
			for _, ev := range resp.Events {
				more, err := handle(ev)
				if err != nil {
					log.WithError(err).WithField("revision", ev.Kv.ModRevision).Error("undecodable watch event")
					return err
				}
				if !more {
					return nil
				}
				last = ev.Kv.ModRevision
			}
		}
	}
}
