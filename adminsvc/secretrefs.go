package adminsvc

import "github.com/gofiber/fiber/v2"

// registerSecretReferences adds secret references.
// Not built yet: this is filled in by the work on issue #5.
func (s *Service) registerSecretReferences(v1 fiber.Router) {}
