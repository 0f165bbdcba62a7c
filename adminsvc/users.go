package adminsvc

import "github.com/gofiber/fiber/v2"

// registerUsers adds users, invites and organisation settings under /admin.
// Not built yet: this is filled in by the work on issue #5.
func (s *Service) registerUsers(v1 fiber.Router) {}
