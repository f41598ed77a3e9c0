package expr

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"sigs.k8s.io/yaml"
)

// metacelLibrary declares the functions metacel adds to Kubernetes' CEL:
//
//	hash.sha256(string|bytes) -> string   hex SHA-256, for stable generated names
//	hash.fnv64a(string) -> string         16 hex digits of FNV-1a 64, a short stable suffix
//	map.merge(map) -> map                 a new map: the receiver's entries, overridden by the argument's
//	json.encode(dyn) -> string            JSON with sorted keys
//	yaml.encode(dyn) -> string            YAML with sorted keys
//	string(quantity) -> string            canonical form of a Kubernetes quantity, e.g. "1536Mi"
func metacelLibrary() cel.EnvOption {
	k, v := cel.TypeParamType("K"), cel.TypeParamType("V")
	return cel.Lib(lib{opts: []cel.EnvOption{
		cel.Function("hash.sha256",
			cel.Overload("hash_sha256_string", []*cel.Type{cel.StringType}, cel.StringType,
				cel.UnaryBinding(func(a ref.Val) ref.Val { return sha256Hex([]byte(a.(types.String))) })),
			cel.Overload("hash_sha256_bytes", []*cel.Type{cel.BytesType}, cel.StringType,
				cel.UnaryBinding(func(a ref.Val) ref.Val { return sha256Hex([]byte(a.(types.Bytes))) }))),
		cel.Function("hash.fnv64a",
			cel.Overload("hash_fnv64a_string", []*cel.Type{cel.StringType}, cel.StringType,
				cel.UnaryBinding(fnv64a))),
		cel.Function("merge",
			cel.MemberOverload("map_merge_map", []*cel.Type{cel.MapType(k, v), cel.MapType(k, v)}, cel.MapType(k, v),
				cel.BinaryBinding(merge))),
		cel.Function("json.encode",
			cel.Overload("json_encode_dyn", []*cel.Type{cel.DynType}, cel.StringType,
				cel.UnaryBinding(func(a ref.Val) ref.Val { return encode(a, json.Marshal) }))),
		cel.Function("yaml.encode",
			cel.Overload("yaml_encode_dyn", []*cel.Type{cel.DynType}, cel.StringType,
				cel.UnaryBinding(func(a ref.Val) ref.Val { return encode(a, yaml.Marshal) }))),
		cel.Function("string",
			cel.Overload("string_quantity", []*cel.Type{apiservercel.QuantityType}, cel.StringType,
				cel.UnaryBinding(func(a ref.Val) ref.Val {
					switch q := a.(type) {
					case apiservercel.Quantity:
						return types.String(q.String())
					case *apiservercel.Quantity:
						return types.String(q.String())
					}
					return types.MaybeNoSuchOverloadErr(a)
				}))),
	}})
}

type lib struct{ opts []cel.EnvOption }

func (l lib) CompileOptions() []cel.EnvOption     { return l.opts }
func (l lib) ProgramOptions() []cel.ProgramOption { return nil }

func sha256Hex(b []byte) ref.Val {
	sum := sha256.Sum256(b)
	return types.String(hex.EncodeToString(sum[:]))
}

func fnv64a(a ref.Val) ref.Val {
	h := fnv.New64a()
	_, _ = h.Write([]byte(a.(types.String)))
	return types.String(fmt.Sprintf("%016x", h.Sum64()))
}

func merge(a, b ref.Val) ref.Val {
	am, aok := a.(traits.Mapper)
	bm, bok := b.(traits.Mapper)
	if !aok || !bok {
		return types.MaybeNoSuchOverloadErr(b)
	}
	out := make(map[ref.Val]ref.Val, int(am.Size().(types.Int))+int(bm.Size().(types.Int)))
	for _, m := range []traits.Mapper{am, bm} {
		for it := m.Iterator(); it.HasNext() == types.True; {
			key := it.Next()
			out[key] = m.Get(key)
		}
	}
	return types.NewRefValMap(types.DefaultTypeAdapter, out)
}

func encode(a ref.Val, marshal func(any) ([]byte, error)) ref.Val {
	v, err := toNative(a)
	if err != nil {
		return types.NewErr("encode: %v", err)
	}
	b, err := marshal(v)
	if err != nil {
		return types.NewErr("encode: %v", err)
	}
	return types.String(b)
}
