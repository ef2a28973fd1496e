#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A latitude and longitude box, in degrees, bounds included.
package struct GeoBox: Hashable, Sendable {
    package var minLatitude: Double
    package var maxLatitude: Double
    package var minLongitude: Double
    package var maxLongitude: Double

    package func contains(_ location: Location) -> Bool {
        (minLatitude...maxLatitude).contains(location.latitude) && (minLongitude...maxLongitude).contains(location.longitude)
    }
}

/// The boxes that hold every location within a distance of a center, by the
/// great-circle distance `Location.distance` measures: what a location index
/// reads for NEAR before the exact distance of each candidate is checked.
package enum GeoBounds {
    /// One box, or two where the circle crosses the antimeridian; nil when
    /// the center is not a location on Earth or the circle holds most of it
    /// (no box would narrow anything).
    package static func boxes(around center: Location, within meters: Double) -> [GeoBox]? {
        guard meters.isFinite, meters >= 0, Limits.accepts(location: center) else { return nil }
        let degrees = 180 / Double.pi
        // The angle the distance spans at Earth's center, widened a little so
        // that rounding in the bounds or in the haversine never loses a location.
        let angle = meters / 6_371_008.8 * (1 + 1e-9) + 1e-12
        guard angle < Double.pi / 2 else { return nil }
        let margin = 1e-9
        let latitude = center.latitude / degrees
        let south = (latitude - angle) * degrees - margin
        let north = (latitude + angle) * degrees + margin
        // A circle around a pole spans every longitude.
        if north >= 90 || south <= -90 {
            return [GeoBox(minLatitude: max(south, -90), maxLatitude: min(north, 90), minLongitude: -180, maxLongitude: 180)]
        }
        // The widest longitude the circle reaches, at the latitude where its edge runs north-south.
        let spread = asin(min(1, sin(angle) / cos(latitude))) * degrees + margin
        let west = center.longitude - spread
        let east = center.longitude + spread
        if east - west >= 360 {
            return [GeoBox(minLatitude: south, maxLatitude: north, minLongitude: -180, maxLongitude: 180)]
        }
        if west < -180 {
            return [GeoBox(minLatitude: south, maxLatitude: north, minLongitude: -180, maxLongitude: east),
                    GeoBox(minLatitude: south, maxLatitude: north, minLongitude: west + 360, maxLongitude: 180)]
        }
        if east > 180 {
            return [GeoBox(minLatitude: south, maxLatitude: north, minLongitude: west, maxLongitude: 180),
                    GeoBox(minLatitude: south, maxLatitude: north, minLongitude: -180, maxLongitude: east - 360)]
        }
        return [GeoBox(minLatitude: south, maxLatitude: north, minLongitude: west, maxLongitude: east)]
    }
}
