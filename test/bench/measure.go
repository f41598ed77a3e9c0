//go:build e2e

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// reqKey is a series of apiserver_request_total without its scope, version and component: what
// was asked of which resource, and the code of a failure ("" for a success). A non-resource
// request has resource "" and its path as subresource, as the API server labels it.
type reqKey struct {
	Verb, Group, Resource, Subresource, Failed string
}

func (k reqKey) String() string {
	r := k.Resource
	if r == "" {
		r = k.Subresource // a path
	} else if k.Subresource != "" {
		r += "/" + k.Subresource
	}
	if k.Failed != "" {
		r += " (" + k.Failed + ")"
	}
	return k.Verb + " " + r
}

// failure is a response code of 400 or more, else "".
func failure(code int) string {
	if code >= 400 {
		return strconv.Itoa(code)
	}
	return ""
}

// counts are requests by series.
type counts map[reqKey]float64

func (c counts) add(o counts, sign float64) counts {
	out := counts{}
	for k, v := range c {
		out[k] = v
	}
	for k, v := range o {
		out[k] += sign * v
	}
	for k, v := range out {
		if v == 0 {
			delete(out, k)
		}
	}
	return out
}

// minus returns c - o.
func (c counts) minus(o counts) counts { return c.add(o, -1) }

// writeVerbs are the verbs that change state, as apiserver_request_total names them.
var writeVerbs = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "APPLY": true, "DELETE": true, "DELETECOLLECTION": true}

// total sums the series that pass keep.
func (c counts) total(keep func(reqKey) bool) float64 {
	t := 0.0
	for k, v := range c {
		if keep(k) {
			t += v
		}
	}
	return t
}

// requests are the requests that count: resource requests but WATCH, which the API server counts
// only when a watch ends (a controller's watches outlive every window). Non-resource requests
// (discovery, OpenAPI, health) are left out: the API server labels them by path, some not at all.
func requests(k reqKey) bool {
	return k.Resource != "" && k.Verb != "WATCH" && k.Verb != "WATCHLIST" && k.Verb != "CONNECT"
}

// writes are the requests that change state: an access review is a POST that writes nothing (the
// API server answers it and keeps nothing), so it is a request but no write.
func writes(k reqKey) bool { return writeVerbs[k.Verb] && !accessReviews(k) }

// accessReviews are the questions of who may do what, and who someone is: SubjectAccessReviews
// (what the runtime asks before it reads for a policy acting as its ServiceAccount),
// SelfSubjectReviews (its own user name, asked once), and the rest of authorization.k8s.io and
// authentication.k8s.io (SelfSubjectAccessReviews, LocalSubjectAccessReviews,
// SelfSubjectRulesReviews, TokenReviews), whoever sends them.
func accessReviews(k reqKey) bool {
	return k.Resource != "" && (k.Group == "authorization.k8s.io" || k.Group == "authentication.k8s.io")
}

func eventWrites(k reqKey) bool { return writeVerbs[k.Verb] && k.Resource == "events" }

// work are the requests of the controller's job: requests but events, which are reported apart
// (they go out on their own queue and rate, after the syncs that made them).
func work(k reqKey) bool { return requests(k) && k.Resource != "events" }

// workWrites are the writes among work.
func workWrites(k reqKey) bool { return work(k) && writes(k) }

// summary lists the largest series first, at most n, the rest summed.
func (c counts) summary(keep func(reqKey) bool, n int) string {
	type kv struct {
		k string
		v float64
	}
	var all []kv
	for k, v := range c {
		if keep(k) && v != 0 {
			all = append(all, kv{k.String(), v})
		}
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].v != all[j].v {
			return all[i].v > all[j].v
		}
		return all[i].k < all[j].k
	})
	var parts []string
	rest := 0.0
	for i, e := range all {
		if i < n {
			parts = append(parts, fmt.Sprintf("%s %s", e.k, num(e.v)))
		} else {
			rest += e.v
		}
	}
	if rest != 0 {
		parts = append(parts, "other "+num(rest))
	}
	if len(parts) == 0 {
		return "–"
	}
	return strings.Join(parts, ", ")
}

func num(v float64) string {
	if v == float64(int64(v)) {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// parseRequestTotal reads apiserver_request_total from the API server's /metrics text.
func parseRequestTotal(r io.Reader) (counts, error) {
	out := counts{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		name, labels, value, ok := parseSample(sc.Text())
		if !ok || name != "apiserver_request_total" {
			continue
		}
		if labels["dry_run"] != "" {
			continue
		}
		code, _ := strconv.Atoi(labels["code"])
		out[reqKey{labels["verb"], labels["group"], labels["resource"], labels["subresource"], failure(code)}] += value
	}
	return out, sc.Err()
}

// parseSample parses one line of the Prometheus text format: name{labels} value.
func parseSample(line string) (name string, labels map[string]string, value float64, ok bool) {
	if line == "" || line[0] == '#' {
		return "", nil, 0, false
	}
	labels = map[string]string{}
	rest := line
	if i := strings.IndexAny(line, "{ "); i < 0 {
		return "", nil, 0, false
	} else {
		name, rest = line[:i], line[i:]
	}
	if strings.HasPrefix(rest, "{") {
		rest = rest[1:]
		for {
			rest = strings.TrimLeft(rest, ", ")
			if strings.HasPrefix(rest, "}") {
				rest = rest[1:]
				break
			}
			eq := strings.Index(rest, `="`)
			if eq < 0 {
				return "", nil, 0, false
			}
			key := rest[:eq]
			rest = rest[eq+2:]
			var val strings.Builder
			i := 0
			for ; i < len(rest) && rest[i] != '"'; i++ {
				if rest[i] == '\\' && i+1 < len(rest) {
					i++
					switch rest[i] {
					case 'n':
						val.WriteByte('\n')
					default:
						val.WriteByte(rest[i])
					}
					continue
				}
				val.WriteByte(rest[i])
			}
			if i >= len(rest) {
				return "", nil, 0, false
			}
			labels[key] = val.String()
			rest = rest[i+1:]
		}
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return "", nil, 0, false
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return "", nil, 0, false
	}
	return name, labels, v, true
}

// sumSamples sums the samples of a metric whose labels include match.
func sumSamples(text, metric string, match map[string]string) (float64, bool) {
	total, found := 0.0, false
	for line := range strings.SplitSeq(text, "\n") {
		name, labels, v, ok := parseSample(line)
		if !ok || name != metric {
			continue
		}
		if includes(labels, match) {
			total += v
			found = true
		}
	}
	return total, found
}

// sampleLabels are the labels of the first sample of a metric whose labels include match (nil:
// none).
func sampleLabels(text, metric string, match map[string]string) map[string]string {
	for line := range strings.SplitSeq(text, "\n") {
		name, labels, _, ok := parseSample(line)
		if ok && name == metric && includes(labels, match) {
			return labels
		}
	}
	return nil
}

// includes says whether labels hold every one of match.
func includes(labels, match map[string]string) bool {
	for k, want := range match {
		if labels[k] != want {
			return false
		}
	}
	return true
}

// auditVerbs maps the audit log's verbs to apiserver_request_total's.
var auditVerbs = map[string]string{
	"get": "GET", "list": "LIST", "watch": "WATCH", "create": "POST", "update": "PUT",
	"patch": "PATCH", "delete": "DELETE", "deletecollection": "DELETECOLLECTION",
}

// byUser are requests by the user who sent them.
type byUser map[string]counts

// all sums every user's.
func (u byUser) all() counts {
	out := counts{}
	for _, c := range u {
		out = out.add(c, 1)
	}
	return out
}

// componentNames name the control plane's users as its components.
var componentNames = map[string]string{apiserverUser: "kube-apiserver", schedulerUser: "kube-scheduler", kwokUser: "kwok"}

// summary is each user's summary (counts.summary), named as components and in their order.
func (u byUser) summary(keep func(reqKey) bool, n int) string {
	named := map[string]counts{}
	for user, c := range u {
		named[orDefault(componentNames[user], user)] = c
	}
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(named)) {
		if s := named[name].summary(keep, n); s != "–" {
			parts = append(parts, name+": "+s)
		}
	}
	if len(parts) == 0 {
		return "–"
	}
	return strings.Join(parts, "; ")
}

// auditCounts counts the requests of an audit log (JSON lines at stage ResponseComplete) whose
// stage timestamp is in [from, to), by user.
func auditCounts(path string, from, to time.Time) (byUser, error) {
	f, err := os.Open(path)
	if err != nil {
		if os.IsNotExist(err) {
			return byUser{}, nil
		}
		return nil, err
	}
	defer func() { _ = f.Close() }()
	out := byUser{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e struct {
			Stage          string    `json:"stage"`
			Verb           string    `json:"verb"`
			RequestURI     string    `json:"requestURI"`
			StageTimestamp time.Time `json:"stageTimestamp"`
			User           struct {
				Username string `json:"username"`
			} `json:"user"`
			ResponseStatus *struct {
				Code int `json:"code"`
			} `json:"responseStatus"`
			ObjectRef *struct {
				Resource, APIGroup, Subresource string
			} `json:"objectRef"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Stage != "ResponseComplete" {
			continue
		}
		if e.StageTimestamp.Before(from) || !e.StageTimestamp.Before(to) {
			continue
		}
		verb := auditVerbs[e.Verb]
		if verb == "" {
			verb = strings.ToUpper(e.Verb)
		}
		k := reqKey{Verb: verb}
		if e.ResponseStatus != nil {
			k.Failed = failure(e.ResponseStatus.Code)
		}
		if e.ObjectRef != nil && e.ObjectRef.Resource != "" {
			k.Group, k.Resource, k.Subresource = e.ObjectRef.APIGroup, e.ObjectRef.Resource, e.ObjectRef.Subresource
		} else {
			u, _ := url.Parse(e.RequestURI)
			if u != nil {
				k.Subresource = u.Path
			}
		}
		if out[e.User.Username] == nil {
			out[e.User.Username] = counts{}
		}
		out[e.User.Username][k]++
	}
	return out, sc.Err()
}

// procStat is what /proc says of a process: CPU seconds (user and system) and resident memory.
type procStat struct {
	CPU      float64 // seconds
	RSS, HWM float64 // MB: resident now, and the peak
	// MB resident now of the binary's mapped file pages (its code and read-only data: the kernel
	// maps the pages around each one touched) and of anonymous memory (heap, stacks)
	File, Anon float64
}

// clockTicks is USER_HZ, 100 on every Linux architecture Go supports.
const clockTicks = 100

// readProc reads /proc/<pid>; a process that is gone reads as zeros.
func readProc(pid int) procStat {
	var st procStat
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return st
	}
	// the command name (field 2) may hold spaces: fields count from its closing parenthesis
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return st
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64) // field 14
	stime, _ := strconv.ParseInt(fields[12], 10, 64) // field 15
	st.CPU = float64(utime+stime) / clockTicks
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return st
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(val), " kB"), 64)
		switch key {
		case "VmRSS":
			st.RSS = kb / 1024
		case "VmHWM":
			st.HWM = kb / 1024
		case "RssFile":
			st.File = kb / 1024
		case "RssAnon":
			st.Anon = kb / 1024
		}
	}
	return st
}
