package compact

import (
	"context"
	"fmt"
	"mime"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// Client lists and watches any resource, decoding objects as *Object.
type Client struct {
	rest rest.Interface
	// protobuf: the built-in kinds are asked for as protobuf (protobuf.go)
	protobuf bool
}

// NewClient returns a Client for the API server of cfg (its rate limit applies to lists; watches
// are not rate limited). server is the API server's version (nil: not known): the built-in kinds
// come as protobuf only from a server no newer than this binary's client-go types, which would
// drop the fields they do not know (ProtobufServer). A watch event of a built-in kind larger than
// maxKept bytes is reduced to its object's metadata as it streams (omitframe.go); 0 keeps all.
func NewClient(cfg *rest.Config, server *version.Info, maxKept int) (*Client, error) {
	c := rest.CopyConfig(cfg)
	c.ContentConfig = rest.ContentConfig{
		AcceptContentTypes:   "application/json",
		ContentType:          "application/json",
		NegotiatedSerializer: negotiator{maxKept: maxKept},
	}
	rc, err := rest.UnversionedRESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("list and watch client: %w", err)
	}
	return &Client{rest: rc, protobuf: ProtobufServer(server)}, nil
}

// ListWatch lists and watches the objects of a resource in every namespace, filtered by a label
// selector ("" for all), for an informer whose example object is &Object{}.
func (c *Client) ListWatch(gvr schema.GroupVersionResource, selector string) *cache.ListWatch {
	return c.listWatch(gvr, selector, "", nil)
}

// listWatch lists and watches a resource with a label selector and a shard selector ("" for
// none); when keep is not nil, it drops the list items and watch events of the objects whose UID
// it refuses before the informer sees them.
func (c *Client) listWatch(gvr schema.GroupVersionResource, labelSelector, shardSelector string, keep func(types.UID) bool) *cache.ListWatch {
	protobuf := c.protobuf && ProtobufFor(gvr)
	request := func(opts metav1.ListOptions) *rest.Request {
		opts.LabelSelector = labelSelector
		opts.ShardSelector = shardSelector
		r := c.rest.Get()
		if protobuf {
			r.SetHeader("Accept", protobufAccept)
		}
		if gvr.Group == "" {
			r = r.AbsPath("/api", gvr.Version, gvr.Resource)
		} else {
			r = r.AbsPath("/apis", gvr.Group, gvr.Version, gvr.Resource)
		}
		return r.VersionedParams(&opts, metav1.ParameterCodec)
	}
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			res := request(opts).Do(ctx)
			if err := res.Error(); err != nil {
				return nil, err // with the API server's Status, when it sent one
			}
			data, _ := res.Raw()
			var contentType string
			res.ContentType(&contentType)
			decode := decodeList
			if mediaType, _, _ := mime.ParseMediaType(contentType); mediaType == protobufMediaType {
				decode = decodeProtobufList
			}
			list, err := decode(data)
			if err != nil {
				return nil, err
			}
			if keep != nil {
				list.keep(keep)
			}
			return list, nil
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.Watch = true
			w, err := request(opts).Watch(ctx)
			if err != nil {
				return nil, err
			}
			if keep != nil {
				return filterWatch(w, keep), nil
			}
			return w, nil
		},
	}
}
