// pprof-check.js: decode a csampler pprof export with pprof-format (npm, DataDog's decoder of
// profile.proto, under tests/node_modules) and print what t-pprof-go.sh compares, as JSON:
// the sample types, each function's self (leaf line) and total value of sample type INDEX,
// the label keys and values seen, the functions that are the inner line of a location with
// more than one line (inlined), and the build ids of the mappings.
// Usage: node pprof-check.js FILE.pb.gz INDEX
'use strict';
const fs = require('fs');
const zlib = require('zlib');
const { Profile } = require('pprof-format');

const [file, indexArg] = process.argv.slice(2);
const index = Number(indexArg || 0);
const prof = Profile.decode(zlib.gunzipSync(fs.readFileSync(file)));
const str = (i) => prof.stringTable.strings[Number(i)];
const functions = new Map(prof.function.map((f) => [Number(f.id), str(f.name)]));
const locations = new Map(prof.location.map((l) => [Number(l.id), l]));
const self = {}, total = {}, labels = {};
let sum = 0;
for (const s of prof.sample) {
	const v = Number(s.value[index]);
	sum += v;
	const names = [];
	for (const id of s.locationId) {
		const loc = locations.get(Number(id));
		if (!loc)
			throw new Error('sample uses undefined location ' + id);
		for (const line of loc.line) {
			if (!functions.has(Number(line.functionId)))
				throw new Error('location uses undefined function ' + line.functionId);
			names.push(functions.get(Number(line.functionId)));
		}
	}
	if (names.length)
		self[names[0]] = (self[names[0]] || 0) + v;
	for (const n of new Set(names))
		total[n] = (total[n] || 0) + v;
	for (const l of s.label) {
		const key = str(l.key);
		labels[key] = labels[key] || {};
		const value = Number(l.str) ? str(l.str) : String(l.num);
		labels[key][value] = (labels[key][value] || 0) + v;
	}
}
const inlined = [];
for (const loc of prof.location)
	if (loc.line.length > 1)
		inlined.push(loc.line.map((l) => functions.get(Number(l.functionId))).join(' in '));
console.log(JSON.stringify({
	sampleTypes: prof.sampleType.map((t) => str(t.type) + '/' + str(t.unit)),
	sum, period: Number(prof.period), self, total, labels, inlined: [...new Set(inlined)],
	buildIds: prof.mapping.map((m) => str(m.buildId)).filter((b) => b),
	mappings: prof.mapping.map((m) => str(m.filename)),
}));
