extension RecordState {
    /// The assets a live state references, in its fields' values and their
    /// conflicts (a conflict's asset is still wanted: it may be chosen). A
    /// deleted record references none.
    public var liveAssets: Set<AssetReference> {
        guard isAlive else { return [] }
        var assets = Set<AssetReference>()
        for register in fields {
            register.value.collectAssets(into: &assets)
            for loser in register.losers { loser.value.collectAssets(into: &assets) }
        }
        return assets
    }
}

extension Optional where Wrapped == FieldValue {
    package func collectAssets(into assets: inout Set<AssetReference>) {
        switch self {
        case .asset(let asset)?: assets.insert(asset)
        case .list(let items)?: for case .asset(let asset) in items { assets.insert(asset) }
        default: break
        }
    }
}
