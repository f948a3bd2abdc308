// "Only the newest answer counts" for requests that a later pick supersedes (the details
// of a clicked event, a file's access sizes, the timeline's window): begin() aborts the
// request before it and hands out a ticket that knows whether it is still the newest.

export class Latest {
  constructor() {
    this.seq = 0;
    this.ctl = null;
  }

  /** Start a request: aborts the previous one; returns {seq, signal, current()}. */
  begin() {
    if (this.ctl) this.ctl.abort();
    const ctl = new AbortController();
    this.ctl = ctl;
    const seq = ++this.seq;
    return { seq, signal: ctl.signal, current: () => seq === this.seq };
  }

  /** Supersede whatever is in flight without starting anything. */
  cancel() {
    if (this.ctl) this.ctl.abort();
    this.ctl = null;
    this.seq++;
  }
}
