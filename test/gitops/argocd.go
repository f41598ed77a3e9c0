package gitops

import (
	"context"
	"fmt"
	"time"

	lua "github.com/yuin/gopher-lua"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The health statuses of Argo CD (gitops-engine's pkg/health) a health script may return.
const (
	Healthy     = "Healthy"
	Progressing = "Progressing"
	Degraded    = "Degraded"
	Suspended   = "Suspended"
	Missing     = "Missing"
	Unknown     = "Unknown"
)

// Health is what a health script returned: Argo CD's HealthStatus.
type Health struct {
	Status  string
	Message string
}

// argoCDTimeout is how long Argo CD lets a script run.
const argoCDTimeout = time.Second

// ArgoCDHealth runs a health script on obj as Argo CD does. A script that fails to run, or
// returns anything but a table, is an error (Argo CD shows the resource Unknown with it); a status
// Argo CD does not know is Unknown.
func ArgoCDHealth(script string, obj *unstructured.Unstructured) (Health, error) {
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	// Argo CD opens these (and a safe os library of its own, which the script does not use)
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{
		{lua.LoadLibName, lua.OpenPackage},
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
	} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(lib.open), NRet: 0, Protect: true}, lua.LString(lib.name)); err != nil {
			return Health{}, fmt.Errorf("open the Lua library %q: %w", lib.name, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), argoCDTimeout)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("obj", luaValue(l, obj.Object))
	if err := l.DoString(script); err != nil {
		return Health{}, fmt.Errorf("run the health script: %w", err)
	}
	return healthOf(l.Get(-1))
}

// healthOf reads the table a script returned.
func healthOf(v lua.LValue) (Health, error) {
	switch v.Type() {
	case lua.LTNil:
		return Health{}, nil
	case lua.LTTable:
	default:
		return Health{}, fmt.Errorf("expect table output from Lua script, not %s", v.Type())
	}
	t := v.(*lua.LTable)
	h := Health{Status: luaString(t.RawGetString("status")), Message: luaString(t.RawGetString("message"))}
	switch h.Status {
	case Healthy, Progressing, Degraded, Suspended, Missing, Unknown:
		return h, nil
	}
	return Health{Status: Unknown, Message: "Lua returned an invalid health status"}, nil
}

func luaString(v lua.LValue) string {
	if s, ok := v.(lua.LString); ok {
		return string(s)
	}
	return ""
}

// luaValue converts an object's JSON value into Lua as Argo CD's decodeValue does: numbers
// (int64 as JSON decoding gives them) become Lua numbers, lists and maps tables.
func luaValue(l *lua.LState, value any) lua.LValue {
	switch v := value.(type) {
	case bool:
		return lua.LBool(v)
	case float64:
		return lua.LNumber(v)
	case int64:
		return lua.LNumber(v)
	case int:
		return lua.LNumber(v)
	case string:
		return lua.LString(v)
	case []any:
		t := l.CreateTable(len(v), 0)
		for _, item := range v {
			t.Append(luaValue(l, item))
		}
		return t
	case map[string]any:
		t := l.CreateTable(0, len(v))
		for k, item := range v {
			t.RawSetH(lua.LString(k), luaValue(l, item))
		}
		return t
	}
	return lua.LNil
}
