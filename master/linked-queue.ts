// A FIFO with O(1) removal from the middle (a client that went away leaves the queue at once).
export interface QueueNode<T> {
  value: T;
  prev: QueueNode<T> | undefined;
  next: QueueNode<T> | undefined;
  queued: boolean;
}

export class LinkedQueue<T> {
  private head: QueueNode<T> | undefined;
  private tail: QueueNode<T> | undefined;
  private count = 0;

  get size(): number {
    return this.count;
  }

  push(value: T): QueueNode<T> {
    const node: QueueNode<T> = { value, prev: this.tail, next: undefined, queued: true };
    if (this.tail) this.tail.next = node;
    else this.head = node;
    this.tail = node;
    this.count++;
    return node;
  }

  remove(node: QueueNode<T>): boolean {
    if (!node.queued) return false;
    if (node.prev) node.prev.next = node.next;
    else this.head = node.next;
    if (node.next) node.next.prev = node.prev;
    else this.tail = node.prev;
    node.prev = node.next = undefined;
    node.queued = false;
    this.count--;
    return true;
  }

  first(): QueueNode<T> | undefined {
    return this.head;
  }

  last(): QueueNode<T> | undefined {
    return this.tail;
  }

  /** The values, first to last (a copy: for checks and hand-overs, not a hot path). */
  values(): T[] {
    const out: T[] = [];
    for (let n = this.head; n; n = n.next) out.push(n.value);
    return out;
  }
}
