// Watch polls the open conversation while something in it still runs on
// the server (an approved action, after a reload or when the approve
// answered before it finished), so the chat shows how it ended without a
// reload: first after FIRST ms, then twice as long each time up to MAX,
// for at most GIVE_UP in all. Home stops it when the chat is left
// (closed, another chat opened, deleted) and pauses it while another
// page is shown.

export const FIRST = 1000;
export const MAX = 8000;
export const GIVE_UP = 10 * 60 * 1000;

export class Watch {
  // load(id) fetches conversation id's view; onView(view) applies it
  // and returns whether something still runs; onGiveUp() is told when
  // the watch stopped after GIVE_UP with something still running.
  constructor({ load, onView, onGiveUp }) {
    this.load = load;
    this.onView = onView;
    this.onGiveUp = onGiveUp;
    this.active = false;
    this.paused = false;
    this.gen = 0; // a load that returns after a stop is dropped
    this.timer = 0;
  }

  // start polls conversation id (the one open now), unless it already
  // does.
  start(id) {
    if (this.active && this.id === id) return;
    this.stop();
    this.id = id;
    this.active = true;
    this.paused = false;
    this.since = Date.now();
    this.delay = FIRST;
    this.schedule();
  }

  schedule() {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.tick(), this.delay);
  }

  stop() {
    this.active = false;
    this.paused = false;
    this.gen++;
    clearTimeout(this.timer);
  }

  // pause stops polling while the chat is out of sight; resume goes on.
  pause() {
    if (!this.active) return;
    this.stop();
    this.paused = true;
  }

  resume() {
    if (this.paused) this.start(this.id);
  }

  async tick() {
    const gen = this.gen;
    let view = null;
    let gone = false;
    try {
      view = await this.load(this.id);
    } catch (err) {
      gone = err.status === 404; // the chat was deleted; else try again later
    }
    if (gen !== this.gen) return;
    if (gone || view && !this.onView(view)) {
      this.stop();
      return;
    }
    if (Date.now() - this.since >= GIVE_UP) {
      this.stop();
      this.onGiveUp();
      return;
    }
    this.delay = Math.min(this.delay * 2, MAX);
    this.schedule();
  }
}
