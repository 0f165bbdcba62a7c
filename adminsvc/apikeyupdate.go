package adminsvc

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/llm-gateway/gateway/core"
	"github.com/llm-gateway/gateway/store"
)

// updateAPIKey is PUT /api-keys/{id}: any of the key's mutable fields, and
// reset_usage. type, user_id and workspace_id never change.
func (s *Service) updateAPIKey(c *fiber.Ctx) error {
	caller := principal(c)
	k, err := s.loadKey(c, func(k keyKind) string { return k.update })
	if err != nil {
		return err
	}
	fields, cerr := decodeObject(c.Body())
	if cerr != nil {
		return cerr
	}
	now := s.now()
	body, probs := parseKeyFields(fields, now, false)
	if err := probs.err(); err != nil {
		return err
	}
	if body.hasScopes {
		var added []string
		for _, sc := range body.Scopes {
			if !slices.Contains(k.Scopes, sc) {
				added = append(added, sc)
			}
		}
		if missing := missingScopes(caller, added); len(missing) > 0 {
			return core.Forbidden("a key cannot grant scopes it does not hold: %s", strings.Join(missing, ", "))
		}
	}
	err = s.st.Update(func(tx store.Tx) error {
		// Re-read inside the transaction so a concurrent rotation or
		// worker run is not overwritten.
		if err := tx.Get(store.BucketAPIKeys, k.ID, &k); errors.Is(err, store.ErrNotFound) {
			return core.NotFound("no API key %q", k.ID)
		} else if err != nil {
			return err
		}
		target, err := actingAs(tx, k)
		if err != nil {
			return err
		}
		if err := checkRoleReach(caller, target, "change"); err != nil {
			return err
		}
		if body.hasUsageLimits && usageRestarts(k.UsageLimits, body.UsageLimits) {
			body.ResetUsage = true
		}
		applyKeyFields(&k, body, now)
		if k.RotationPolicy != nil && len(k.AlertEmails) == 0 {
			return core.ValidationError("rotation_policy", "rotation_policy: needs alert_emails: the secret of a scheduled rotation is e-mailed there")
		}
		if err := checkKeyDefaults(tx, s, k); err != nil {
			return err
		}
		k.LastUpdatedAt = now
		return tx.Put(store.BucketAPIKeys, k.ID, k)
	})
	if err != nil {
		return err
	}
	if err := s.keys.Reload(); err != nil {
		return core.Internal(err, "the key was updated but the key snapshot could not be reloaded")
	}
	if err := s.reloadLimits(); err != nil {
		return err
	}
	if body.ResetUsage {
		if err := s.resetEntityUsage(c.UserContext(), "api_key", k.ID); err != nil {
			return err
		}
	}
	return c.JSON(fiber.Map{})
}

// rotateAPIKey is POST /api-keys/{id}/rotate: a new secret, returned once;
// the old one keeps working for the transition period.
func (s *Service) rotateAPIKey(c *fiber.Ctx) error {
	caller := principal(c)
	k, err := s.loadKey(c, func(k keyKind) string { return k.rotate })
	if err != nil {
		return err
	}
	var transitionMS int64
	if raw := bytes.TrimSpace(c.Body()); len(raw) > 0 {
		fields, cerr := decodeObject(raw)
		if cerr != nil {
			return cerr
		}
		var p problems
		unknownFields(fields, "", []string{"key_transition_period_ms"}, &p)
		if v, ok := fields["key_transition_period_ms"]; ok {
			if json.Unmarshal(v, &transitionMS) != nil || transitionMS < minTransitionMS {
				p.add("key_transition_period_ms", "must be a whole number of milliseconds ≥ %d (30 minutes)", minTransitionMS)
			}
		}
		if err := p.err(); err != nil {
			return err
		}
	}
	now := s.now()
	var secret string
	err = s.st.Update(func(tx store.Tx) error {
		if err := tx.Get(store.BucketAPIKeys, k.ID, &k); errors.Is(err, store.ErrNotFound) {
			return core.NotFound("no API key %q", k.ID)
		} else if err != nil {
			return err
		}
		target, err := actingAs(tx, k)
		if err != nil {
			return err
		}
		if err := checkReach(caller, target, "rotate"); err != nil {
			return err
		}
		if k.Status == store.KeyStatusExpired || (k.ExpiresAt != nil && !now.Before(*k.ExpiresAt)) {
			return core.Conflict("API key %s has expired; an expired key cannot be rotated", k.ID)
		}
		if inTransition(k, now) {
			return core.Conflict("API key %s is in a rotation transition until %s; rotate again after it ends",
				k.ID, k.TransitionExpiresAt.UTC().Format(time.RFC3339))
		}
		secret = rotateKey(&k, now, transitionMS)
		return tx.Put(store.BucketAPIKeys, k.ID, k)
	})
	if err != nil {
		return err
	}
	if err := s.keys.Reload(); err != nil {
		return core.Internal(err, "the key was rotated but the key snapshot could not be reloaded")
	}
	return c.JSON(fiber.Map{"id": k.ID, "key": secret, "key_transition_expires_at": k.TransitionExpiresAt})
}

// inTransition reports whether k's previous secret still works at now.
func inTransition(k store.APIKey, now time.Time) bool {
	return k.PrevHash != "" && k.TransitionExpiresAt != nil && now.Before(*k.TransitionExpiresAt)
}

// rotateKey gives k a new secret and returns it; the current secret stays
// valid for transitionMS (0: the rotation policy's period, else 30 min).
func rotateKey(k *store.APIKey, now time.Time, transitionMS int64) string {
	if transitionMS == 0 && k.RotationPolicy != nil {
		transitionMS = k.RotationPolicy.KeyTransitionPeriodMS
	}
	if transitionMS == 0 {
		transitionMS = minTransitionMS
	}
	until := now.Add(time.Duration(transitionMS) * time.Millisecond)
	secret := newKeySecret()
	k.PrevHash, k.TransitionExpiresAt = k.Hash, &until
	k.Hash, k.MaskedKey = hashKey(secret), maskKey(secret)
	k.LastRotatedAt, k.LastUpdatedAt, k.RotationWarned = &now, now, false
	if k.RotationPolicy != nil && k.RotationPolicy.NextRotationAt != nil && !now.Before(*k.RotationPolicy.NextRotationAt) {
		// A one-off date is used up; a period rolls on from this rotation.
		rp := *k.RotationPolicy
		rp.NextRotationAt = nil
		k.RotationPolicy = &rp
	}
	return secret
}

// nextRotation is when k's rotation policy next rotates it, or nil.
func nextRotation(k store.APIKey) *time.Time {
	rp := k.RotationPolicy
	if rp == nil {
		return nil
	}
	if rp.NextRotationAt != nil {
		return rp.NextRotationAt
	}
	from := k.CreatedAt
	if k.LastRotatedAt != nil {
		from = *k.LastRotatedAt
	}
	var t time.Time
	switch rp.RotationPeriod {
	case "weekly":
		t = from.AddDate(0, 0, 7)
	case "monthly":
		t = from.AddDate(0, 1, 0)
	default:
		return nil
	}
	return &t
}
