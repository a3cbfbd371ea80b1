#!/usr/bin/env node
// What pi itself makes of session files: runs pi's own SessionManager (npm
// @mariozechner/pi-coding-agent, found through $PI_NODE_MODULES) on many files in one process.
//
//   node pi_session_oracle.mjs JOBS.json      (or the jobs on stdin)
//
// JOBS is a JSON array; one JSON line is printed per job, in order, {"ok": true, ...} or
// {"ok": false, "error": "..."}. Jobs:
//   {"op": "context", "file": F, "leaf"?: ID | null}
//       header (after migration), entryIds (file order), leafId, messages, thinkingLevel,
//       model (buildSessionContext), llm (convertToLlm), branchIds (getBranch), treeFlat
//       (pre-order walk of getTree with parent, depth, label), sessionName
//   {"op": "migrate", "file": F}            -> {"text": the file as pi rewrites it}
//   {"op": "append", "file": F, "out": O, "messages": [M, ...]}
//       copy F to O, open O with pi and appendMessage each M (pi writing after us)
//   {"op": "write", "out": O, "cwd": C, "steps": [...]}
//       pi writes a new session at O; steps are {"call": METHOD, "args": [...], "as"?: NAME};
//       an argument "$NAME" is the id an earlier step returned
//   {"op": "bench", "file": F}              -> open/context/tree times (ms); run one per process
//                                              for a meaningful "maxRssKb"
//
// pi's SessionManager.open() rewrites files it migrates and truncates files without a valid
// header, so "context" and "migrate" always open a temporary copy. pi's v1 -> v2 migration
// assigns random ids; crypto.randomUUID is replaced by a counter reset for every job, so ids
// are 00000001, 00000002, ... (pass --random-ids to keep pi's random ids).
import crypto from "node:crypto";
import fs from "node:fs";
import { syncBuiltinESMExports } from "node:module";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";

const args = process.argv.slice(2);
let counter = 0;
if (!args.includes("--random-ids")) {
	// pi's generateId() is randomUUID().slice(0, 8): patch before pi's modules are imported
	crypto.randomUUID = () => {
		counter++;
		return `${counter.toString(16).padStart(8, "0")}-0000-4000-8000-000000000000`;
	};
	syncBuiltinESMExports();
}

const NODE_MODULES = process.env.PI_NODE_MODULES;
if (!NODE_MODULES) {
	console.error("set PI_NODE_MODULES to the node_modules folder that holds @mariozechner/pi-coding-agent");
	process.exit(2);
}
// @mariozechner/pi-coding-agent (0.x) or @earendil-works/pi-coding-agent (1.x)
const PACKAGE = process.env.PI_PACKAGE || "@mariozechner/pi-coding-agent";
const DIST = path.join(NODE_MODULES, ...PACKAGE.split("/"), "dist");
const load = (rel) => import(pathToFileURL(path.join(DIST, rel)).href);
const { SessionManager, buildSessionContext } = await load("core/session-manager.js");
const { convertToLlm } = await load("core/messages.js");

function tempCopy(file) {
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), "pi-oracle-"));
	const dst = path.join(dir, path.basename(file));
	fs.copyFileSync(file, dst);
	return { dir, dst, cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

function treeFlat(roots) {
	// iterative pre-order: a 100k-deep branch must not hit the stack limit
	const out = [];
	const stack = [];
	for (let i = roots.length - 1; i >= 0; i--) stack.push([roots[i], null, 0]);
	while (stack.length) {
		const [node, parent, depth] = stack.pop();
		const item = { id: node.entry.id, type: node.entry.type, parent, depth };
		if (node.label !== undefined) item.label = node.label;
		if (node.labelTimestamp !== undefined) item.labelTimestamp = node.labelTimestamp;
		out.push(item);
		for (let i = node.children.length - 1; i >= 0; i--) stack.push([node.children[i], node.entry.id, depth + 1]);
	}
	return out;
}

function opContext(job) {
	const { dst, dir, cleanup } = tempCopy(job.file);
	try {
		const sm = SessionManager.open(dst, dir);
		const entries = sm.getEntries();
		let leafId;
		let ctx;
		if (Object.hasOwn(job, "leaf")) {
			leafId = job.leaf;
			ctx = buildSessionContext(entries, leafId);
		} else {
			leafId = sm.getLeafId();
			ctx = sm.buildSessionContext();
		}
		return {
			header: sm.getHeader(),
			entryIds: entries.map((e) => e.id ?? null),
			leafId,
			messages: ctx.messages,
			thinkingLevel: ctx.thinkingLevel,
			model: ctx.model,
			llm: convertToLlm(ctx.messages),
			branchIds: leafId === null ? [] : sm.getBranch(leafId).map((e) => e.id),
			treeFlat: treeFlat(sm.getTree()),
			sessionName: sm.getSessionName() ?? null,
		};
	} finally {
		cleanup();
	}
}

function opMigrate(job) {
	const { dst, dir, cleanup } = tempCopy(job.file);
	try {
		SessionManager.open(dst, dir);
		return { text: fs.readFileSync(dst, "utf8") };
	} finally {
		cleanup();
	}
}

function opAppend(job) {
	fs.copyFileSync(job.file, job.out);
	const sm = SessionManager.open(job.out, path.dirname(job.out));
	const before = sm.getLeafId();
	const ids = job.messages.map((m) => sm.appendMessage(m));
	return { leafBefore: before, ids, leafId: sm.getLeafId() };
}

function opWrite(job) {
	if (fs.existsSync(job.out)) throw new Error(`${job.out} exists`);
	const sm = SessionManager.open(job.out, path.dirname(job.out), job.cwd);
	const names = {};
	const arg = (a) => (typeof a === "string" && a.startsWith("$") ? names[a.slice(1)] : a);
	for (const step of job.steps) {
		const fn = sm[step.call];
		if (typeof fn !== "function") throw new Error(`no SessionManager.${step.call}`);
		const result = fn.apply(sm, (step.args ?? []).map(arg));
		if (step.as) names[step.as] = result;
	}
	return { names, leafId: sm.getLeafId(), file: sm.getSessionFile(), written: fs.existsSync(job.out) };
}

function peakRssKb() {
	// VmHWM is this process's own peak; resourceUsage().maxRSS also counts the parent's RSS
	// at fork time (Linux keeps the larger across fork + exec)
	try {
		const row = fs.readFileSync("/proc/self/status", "utf8").split("\n").find((r) => r.startsWith("VmHWM:"));
		if (row) return Number(row.split(/\s+/)[1]);
	} catch {}
	return process.resourceUsage().maxRSS;
}

function opBench(job) {
	const { dst, dir, cleanup } = tempCopy(job.file);
	try {
		const t0 = performance.now();
		const sm = SessionManager.open(dst, dir);
		const t1 = performance.now();
		const ctx = sm.buildSessionContext();
		const t2 = performance.now();
		const tree = sm.getTree();
		const t3 = performance.now();
		return {
			openMs: t1 - t0,
			contextMs: t2 - t1,
			treeMs: t3 - t2,
			entries: sm.getEntries().length,
			messages: ctx.messages.length,
			roots: tree.length,
			maxRssKb: peakRssKb(),
		};
	} finally {
		cleanup();
	}
}

const OPS = { context: opContext, migrate: opMigrate, append: opAppend, write: opWrite, bench: opBench };

const source = args.find((a) => !a.startsWith("--"));
const jobs = JSON.parse(source ? fs.readFileSync(source, "utf8") : fs.readFileSync(0, "utf8"));
for (const job of jobs) {
	counter = 0;
	let line;
	try {
		const op = OPS[job.op];
		if (!op) throw new Error(`unknown op ${job.op}`);
		line = JSON.stringify({ ok: true, ...op(job) });
	} catch (err) {
		line = JSON.stringify({ ok: false, error: String(err?.stack ?? err) });
	}
	process.stdout.write(`${line}\n`);
}
