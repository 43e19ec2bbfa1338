/*
Copyright 2025 The Kubernetes Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package disaggregatedset

import (
	"context"
	"fmt"
	"maps"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	leaderworkersetv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	disaggregatedsetv1 "sigs.k8s.io/lws/api/disaggregatedset/v1"
	disaggregatedsetutils "sigs.k8s.io/lws/pkg/utils/disaggregatedset"
)

type LeaderWorkerSetManager struct {
	client client.Client
}

func NewLeaderWorkerSetManager(c client.Client) *LeaderWorkerSetManager {
	return &LeaderWorkerSetManager{client: c}
}

func mergeLabels(userLabels, autoLabels map[string]string) map[string]string {
	merged := make(map[string]string, len(userLabels)+len(autoLabels))
	maps.Copy(merged, userLabels)
	maps.Copy(merged, autoLabels)
	return merged
}

func copyAnnotations(annotations map[string]string) map[string]string {
	if len(annotations) == 0 {
		return nil
	}
	return maps.Clone(annotations)
}

func (manager *LeaderWorkerSetManager) Create(ctx context.Context, params disaggregatedsetutils.CreateParams) error {
	lwsName := disaggregatedsetutils.GenerateName(params.DisaggregatedSet.Name, params.Slice, params.Revision, params.Role)
	replicas := int32(params.Replicas)
	config := params.Config

	// Copy the spec and override replicas.
	lwsSpec := config.Spec
	lwsSpec.Replicas = &replicas

	// Inject system labels (role, name, revision) into pod templates.
	// These don't come from the user's spec — services select pods by them.
	lwsSpec.LeaderWorkerTemplate.WorkerTemplate.Labels = mergeLabels(config.Spec.LeaderWorkerTemplate.WorkerTemplate.Labels, params.Labels)
	// Defensive copy: struct copy is shallow, so maps are shared with the original config.
	lwsSpec.LeaderWorkerTemplate.WorkerTemplate.Annotations = copyAnnotations(config.Spec.LeaderWorkerTemplate.WorkerTemplate.Annotations)
	// Inject placement affinity (no-op when no policy is set). The helper deep-copies
	// any existing affinity, so the shared worker template is not mutated.
	disaggregatedsetutils.SetPlacementAffinities(&lwsSpec.LeaderWorkerTemplate.WorkerTemplate.Spec, params.DisaggregatedSet.Name, params.Slice, params.DisaggregatedSet.Spec.PlacementPolicy)

	if lwsSpec.LeaderWorkerTemplate.LeaderTemplate != nil {
		lwsSpec.LeaderWorkerTemplate.LeaderTemplate = lwsSpec.LeaderWorkerTemplate.LeaderTemplate.DeepCopy()
		lwsSpec.LeaderWorkerTemplate.LeaderTemplate.Labels = mergeLabels(config.Spec.LeaderWorkerTemplate.LeaderTemplate.Labels, params.Labels)
		lwsSpec.LeaderWorkerTemplate.LeaderTemplate.Annotations = copyAnnotations(config.Spec.LeaderWorkerTemplate.LeaderTemplate.Annotations)
		disaggregatedsetutils.SetPlacementAffinities(&lwsSpec.LeaderWorkerTemplate.LeaderTemplate.Spec, params.DisaggregatedSet.Name, params.Slice, params.DisaggregatedSet.Spec.PlacementPolicy)
	}

	leaderWorkerSet := &leaderworkersetv1.LeaderWorkerSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:        lwsName,
			Namespace:   params.DisaggregatedSet.Namespace,
			Labels:      mergeLabels(config.ObjectMeta.Labels, params.Labels),
			Annotations: copyAnnotations(config.ObjectMeta.Annotations),
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: disaggregatedsetv1.GroupVersion.String(),
				Kind:       "DisaggregatedSet",
				Name:       params.DisaggregatedSet.Name,
				UID:        params.DisaggregatedSet.UID,
				Controller: ptr.To(true),
			}},
		},
		Spec: lwsSpec,
	}

	if err := manager.client.Create(ctx, leaderWorkerSet); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return fmt.Errorf("failed to create LeaderWorkerSet %s: %w", lwsName, err)
	}

	log := logf.FromContext(ctx)
	log.Info("Created LWS", "name", lwsName, "role", params.Role, "revision", params.Revision, "replicas", params.Replicas)
	return nil
}

func (manager *LeaderWorkerSetManager) Scale(ctx context.Context, namespace, name string, replicas int) error {
	leaderWorkerSet := &leaderworkersetv1.LeaderWorkerSet{}
	if err := manager.client.Get(ctx, types.NamespacedName{Name: name, Namespace: namespace}, leaderWorkerSet); err != nil {
		return fmt.Errorf("failed to get LeaderWorkerSet %s for scaling: %w", name, err)
	}

	if int(getLWSReplicas(leaderWorkerSet)) == replicas {
		return nil
	}

	replicas32 := int32(replicas)
	patch := client.MergeFrom(leaderWorkerSet.DeepCopy())
	leaderWorkerSet.Spec.Replicas = &replicas32
	if err := manager.client.Patch(ctx, leaderWorkerSet, patch); err != nil {
		return fmt.Errorf("failed to scale LeaderWorkerSet %s: %w", name, err)
	}

	return nil
}

func (manager *LeaderWorkerSetManager) Get(ctx context.Context, namespace, name string) (*leaderworkersetv1.LeaderWorkerSet, error) {
	lws := &leaderworkersetv1.LeaderWorkerSet{}
	err := manager.client.Get(ctx, types.NamespacedName{Name: name, Namespace: namespace}, lws)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("failed to get LeaderWorkerSet %s: %w", name, err)
	}
	return lws, nil
}

// List returns the LWS for a DisaggregatedSet, filtered to one slice. A slice < 0
// matches all slices. Slice 0 also matches legacy (pre-slices) LWS that carry no
// slice label, so they are reconciled as slice 0. Filtering is client-side because
// "slice label == 0 OR absent" cannot be expressed as a label selector.
func (manager *LeaderWorkerSetManager) List(ctx context.Context, namespace, disaggDeploymentName string, slice int, role string) ([]*leaderworkersetv1.LeaderWorkerSet, error) {
	lwsObjList := &leaderworkersetv1.LeaderWorkerSetList{}

	labels := client.MatchingLabels{disaggregatedsetv1.SetNameLabelKey: disaggDeploymentName}
	if role != "" {
		labels[disaggregatedsetv1.RoleLabelKey] = role
	}

	if err := manager.client.List(ctx, lwsObjList, client.InNamespace(namespace), labels); err != nil {
		return nil, fmt.Errorf("failed to list LeaderWorkerSets for %s/%s: %w", namespace, disaggDeploymentName, err)
	}

	result := make([]*leaderworkersetv1.LeaderWorkerSet, 0, len(lwsObjList.Items))
	for i := range lwsObjList.Items {
		if disaggregatedsetutils.SliceLabelMatches(lwsObjList.Items[i].Labels, slice) {
			result = append(result, &lwsObjList.Items[i])
		}
	}
	return result, nil
}

// GetForRole returns the existing LWS for (slice, revision, role), or nil if none.
// It looks up the slice-aware name and, for slice 0, falls back to the legacy
// (pre-slices) name so a legacy object is adopted in place rather than duplicated.
func (manager *LeaderWorkerSetManager) GetForRole(ctx context.Context, ds *disaggregatedsetv1.DisaggregatedSet, slice int, revision, role string) (*leaderworkersetv1.LeaderWorkerSet, error) {
	lws, err := manager.Get(ctx, ds.Namespace, disaggregatedsetutils.GenerateName(ds.Name, slice, revision, role))
	if err != nil {
		return nil, err
	}
	if lws != nil || slice != 0 {
		return lws, nil
	}
	return manager.Get(ctx, ds.Namespace, disaggregatedsetutils.GenerateLegacyName(ds.Name, revision, role))
}

func (manager *LeaderWorkerSetManager) Delete(ctx context.Context, namespace, name string) error {
	leaderWorkerSet := &leaderworkersetv1.LeaderWorkerSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: namespace,
		},
	}

	if err := manager.client.Delete(ctx, leaderWorkerSet); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("failed to delete LeaderWorkerSet %s: %w", name, err)
	}

	return nil
}

func getLWSReplicas(leaderWorkerSet *leaderworkersetv1.LeaderWorkerSet) int32 {
	if leaderWorkerSet.Spec.Replicas == nil {
		return 1
	}
	return *leaderWorkerSet.Spec.Replicas
}

// GetRevisionRolesList fetches all LWS for a DisaggregatedSet, splits them into
// old (non-target) and new (target revision), and groups each set by revision.
// Returns: (oldRevisions, newRevision, error). newRevision is nil if no LWS
// exist for the target revision yet.
func (manager *LeaderWorkerSetManager) GetRevisionRolesList(
	ctx context.Context,
	namespace, disaggDeploymentName string, slice int, revision string,
) (disaggregatedsetutils.RevisionRolesList, *disaggregatedsetutils.RevisionRoles, error) {
	lwsList, err := manager.List(ctx, namespace, disaggDeploymentName, slice, "")
	if err != nil {
		return nil, nil, fmt.Errorf("failed to list LWS: %w", err)
	}

	var oldLWS []*leaderworkersetv1.LeaderWorkerSet
	var newLWS []*leaderworkersetv1.LeaderWorkerSet
	for _, lws := range lwsList {
		if lws.Labels[disaggregatedsetv1.RevisionLabelKey] == revision {
			newLWS = append(newLWS, lws)
		} else {
			oldLWS = append(oldLWS, lws)
		}
	}

	oldRevisions := disaggregatedsetutils.GroupByRevision(oldLWS)
	newGrouped := disaggregatedsetutils.GroupByRevision(newLWS)

	// The target revision should have at most one RevisionRoles entry (one LWS
	// per role grouped together). Take index 0 since GroupByRevision returns
	// one entry per unique revision hash, and all newLWS share the same revision.
	var newRevision *disaggregatedsetutils.RevisionRoles
	if len(newGrouped) > 0 {
		newRevision = &newGrouped[0]
	}

	return oldRevisions, newRevision, nil
}

func parseInitialReplicasAnnotation(leaderWorkerSet *leaderworkersetv1.LeaderWorkerSet) *int {
	if leaderWorkerSet.Annotations == nil {
		return nil
	}
	valueStr, ok := leaderWorkerSet.Annotations[disaggregatedsetv1.InitialReplicasAnnotationKey]
	if !ok {
		return nil
	}
	parsed, err := strconv.Atoi(valueStr)
	if err != nil {
		return nil
	}
	return &parsed
}

func (manager *LeaderWorkerSetManager) patchInitialReplicasAnnotation(
	ctx context.Context,
	leaderWorkerSet *leaderworkersetv1.LeaderWorkerSet,
	value int,
) error {
	patch := client.MergeFrom(leaderWorkerSet.DeepCopy())
	if leaderWorkerSet.Annotations == nil {
		leaderWorkerSet.Annotations = make(map[string]string)
	}
	leaderWorkerSet.Annotations[disaggregatedsetv1.InitialReplicasAnnotationKey] = strconv.Itoa(value)
	return manager.client.Patch(ctx, leaderWorkerSet, patch)
}

func (manager *LeaderWorkerSetManager) SetInitialReplicas(
	ctx context.Context,
	namespace, name string,
	replicas int,
) (*int, error) {
	log := logf.FromContext(ctx)

	leaderWorkerSet := &leaderworkersetv1.LeaderWorkerSet{}
	if err := manager.client.Get(ctx, types.NamespacedName{Name: name, Namespace: namespace}, leaderWorkerSet); err != nil {
		return nil, fmt.Errorf("failed to get LeaderWorkerSet %s: %w", name, err)
	}

	oldValue := parseInitialReplicasAnnotation(leaderWorkerSet)

	if oldValue != nil && *oldValue != replicas {
		log.Info("WARNING: Overwriting initial-replicas annotation with different value",
			"workload", name,
			"oldValue", *oldValue,
			"newValue", replicas)
	}

	if oldValue != nil && *oldValue == replicas {
		return oldValue, nil
	}

	if err := manager.patchInitialReplicasAnnotation(ctx, leaderWorkerSet, replicas); err != nil {
		return nil, fmt.Errorf("failed to update initial-replicas annotation on %s: %w", name, err)
	}

	return oldValue, nil
}
