// AgentView, part 1 of 4: the transcript store (snapshot + numbered ops), no DOM.
//
// Transport: the kernel sends
//   * traits `transcript` + `transcript_seq`: a snapshot of every item, at message boundaries;
//   * custom messages {type: "ops", ops: [{s, o, ...}]}: numbered changes, coalesced (<= ~30/s);
//   * custom message {type: "state", seq, items?, status}: the full state, in reply to "sync".
// Store keeps the ops applied after its snapshot and replays those newer than each new
// snapshot, so an op already folded into a snapshot is never applied twice, in any order.
//
// The four parts are joined into one module by pi_jupyter.notebook.agent_view.view (anywidget
// loads one module per widget); each part's top-level names are unique across the parts.

function clone(value) {
  return value === undefined ? undefined : JSON.parse(JSON.stringify(value));
}

// ---------------------------------------------------------------------------------- store

export class Store {
  constructor() {
    this.items = [];
    this.byId = new Map();
    this.calls = new Map(); // tool call id -> block
    this.base = -1; // seq of the snapshot the items were built from
    this.applied = 0; // seq of the last change applied
    this.log = []; // ops applied after `base`, replayed on a newer snapshot
    this.dirty = new Set(); // ids of items to re-render
    this.structural = true; // the item list itself changed
  }

  /** Replace the state by a snapshot at `seq`; returns false for a snapshot older than ours. */
  loadSnapshot(items, seq) {
    if (typeof seq !== "number" || seq < this.base) return false;
    this.items = clone(items || []);
    this._reindex();
    this.base = seq;
    this.applied = seq;
    this.log = this.log.filter((op) => op.s > seq);
    for (const op of this.log) this._apply(op);
    this.structural = true;
    return true;
  }

  /** Apply the ops newer than what is already applied. */
  applyOps(ops) {
    for (const op of ops || []) {
      if (typeof op.s !== "number" || op.s <= this.applied) continue;
      this._apply(op);
      this.log.push(op);
    }
  }

  _reindex() {
    this.byId = new Map();
    this.calls = new Map();
    for (const item of this.items) this._index(item);
  }

  _index(item) {
    this.byId.set(item.id, item);
    for (const block of item.blocks || []) {
      if (block && block.type === "toolCall" && block.id) this.calls.set(block.id, { item, block });
    }
  }

  _apply(op) {
    this.applied = op.s;
    switch (op.o) {
      case "add": {
        if (this.byId.has(op.item.id)) break;
        const item = clone(op.item);
        this.items.push(item);
        this._index(item);
        this.structural = true;
        break;
      }
      case "set": {
        const old = this.byId.get(op.item.id);
        if (!old) break;
        const item = clone(op.item);
        this.items[this.items.indexOf(old)] = item;
        this._index(item);
        this.dirty.add(item.id);
        break;
      }
      case "meta": {
        const item = this.byId.get(op.i);
        if (!item) break;
        Object.assign(item, clone(op.m));
        this.dirty.add(item.id);
        break;
      }
      case "blk": {
        const item = this.byId.get(op.i);
        if (!item) break;
        item.blocks = item.blocks || [];
        while (item.blocks.length <= op.b) item.blocks.push({ type: "other", text: "" });
        const old = item.blocks[op.b];
        const block = clone(op.block);
        if (old && old.x && block.id === old.id && !block.x) block.x = old.x;
        item.blocks[op.b] = block;
        if (block.type === "toolCall" && block.id) this.calls.set(block.id, { item, block });
        this.dirty.add(item.id);
        break;
      }
      case "d": {
        const item = this.byId.get(op.i);
        const block = item && item.blocks && item.blocks[op.b];
        if (!block) break;
        block.text = (block.text || "") + op.t;
        this.dirty.add(item.id);
        break;
      }
      case "x": {
        const hit = this.calls.get(op.c);
        if (!hit) break;
        hit.block.x = clone(op.x);
        this.dirty.add(hit.item.id);
        break;
      }
      default:
        break; // an op a newer kernel side knows and we do not: skip it
    }
  }
}
