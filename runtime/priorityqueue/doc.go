// Package priorityqueue is the order in which a controller's workqueue hands out its keys: a
// key asked for by something that changed (a parent's edit, a child's event, a retry) before a
// key asked for only to look again (a resync of every parent, a relist's unchanged objects). It is the Queue that client-go's workqueue takes
// (workqueue.TypedQueueConfig.Queue); the workqueue keeps what it always did: a key queued once
// however often it is added, never handed to two workers at once, rate limits and delays.
//
// Without it the workqueue is first in, first out: at 100,000 parents, an edit made during a
// resync waited behind every parent the resync had queued before it (p99 1.3 s, against 0.25 s
// for controller-runtime, whose priority queue gives resyncs a low priority).
// client-go's workqueue has no priorities, and metacel does not depend on controller-runtime, so
// this package adds the two it needs, from client-go's own FIFO (workqueue.DefaultQueue).
//
// A key is low when the add that queued it was announced with Lower; any other add of a key
// that waits at low raises it (the workqueue calls Touch). A key added while a worker has it is
// queued again when the worker is done, at the priority of the add's announcement, or high.
//
// A key at low waits as long as keys at high keep coming: a controller that cannot keep up with
// its events syncs its resyncs last, as controller-runtime's does. Nothing is lost: every key
// queued is handed out once the high keys are done.
//
// A queue drained after a peak of keys (every parent queued at once, at a start or a resync)
// makes its map and levels anew: a Go map keeps the room of its most entries, about 11 MB for
// 100,000 keys here, for the life of the process otherwise.
package priorityqueue
