// kvgen's CPU harness around TensorRT-LLM's C++ pool split (KV cache manager V2 storage).
//
// bench/engines/trtllm_oracle.py cuts the engine's own functions (see
// trtllm_static_source.CPP_FUNCTIONS) out of the engine's source text, verbatim, and puts them
// where the marked lines below say; everything else in this file is kvgen's: small stand-ins
// for the types those functions use (typed indices and vectors, the life-cycle registry, the
// pool-group mapping, the cache-tier configs) and a main that reads cases on stdin. The engine's
// code never enters the repository; this file holds none of it.
//
// Input, one case per line (whitespace-separated integers unless noted):
//   tpb quota util(float text) nLC {window(-1: none) sinkBlocks ssm(0/1)}*nLC
//   nPG {nPools {size}*nPools}*nPG {pg}*nLC
//   hasTypical [nReq {capacity history}*nReq] nConstraints {nReq {capacity history}*nReq}*
//   hasRatio [{ratio(float text)}*nLC]
// Output, one line per case: "slots s0 s1 ... min m0 m1 ... ratio r0 r1 ..." (ratios %.9g),
// or "error <message>".
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iostream>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace kv
{

#define TLLM_CHECK_DEBUG(...) ((void) 0)
#define TLLM_CHECK_DEBUG_WITH_INFO(...) ((void) 0)
#define TLLM_CHECK_WITH_INFO(cond, msg)                                                                               \
    do                                                                                                                 \
    {                                                                                                                  \
        if (!(cond))                                                                                                   \
            throw std::runtime_error(msg);                                                                             \
    } while (0)
#define TLLM_UNLIKELY(x) (x)
#define TLLM_LOG_WARNING(...) ((void) 0)
constexpr bool gDebug = false;

// A strongly typed index (the engine's StrongIndex): an int with its own type.
template <typename Tag>
struct Index
{
    int v{0};
    constexpr Index() = default;
    constexpr explicit Index(int x)
        : v(x)
    {
    }
    constexpr int value() const
    {
        return v;
    }
    Index& operator++()
    {
        ++v;
        return *this;
    }
    Index& operator+=(int x)
    {
        v += x;
        return *this;
    }
    friend auto operator<=>(Index, Index) = default;
};

using LifeCycleId = Index<struct LifeCycleTag>;
using PoolGroupIndex = Index<struct PoolGroupTag>;
using PoolIndex = Index<struct PoolTag>;
using CacheLevel = int;
using BlockOrdinal = int;
using SlotCount = int64_t;
constexpr CacheLevel kHotLevel = 0;

template <typename T>
size_t toSizeT(Index<T> i)
{
    return static_cast<size_t>(i.v);
}

inline size_t slotCountToSizeT(SlotCount n)
{
    return static_cast<size_t>(n);
}

inline SlotCount slotCountValueFromSize(size_t n)
{
    return static_cast<SlotCount>(n);
}

// A vector indexed by a typed index (the engine's TypedVec).
template <typename I, typename T>
struct TypedVec
{
    std::vector<T> data;
    TypedVec() = default;
    explicit TypedVec(I n)
        : data(toSizeT(n))
    {
    }
    TypedVec(I n, T value)
        : data(toSizeT(n), value)
    {
    }
    explicit TypedVec(std::vector<T> v)
        : data(std::move(v))
    {
    }
    I size() const
    {
        return I{static_cast<int>(data.size())};
    }
    size_t stdSize() const
    {
        return data.size();
    }
    T& operator[](I i)
    {
        return data[toSizeT(i)];
    }
    T const& operator[](I i) const
    {
        return data[toSizeT(i)];
    }
    T& at(I i)
    {
        return data.at(toSizeT(i));
    }
    T const& at(I i) const
    {
        return data.at(toSizeT(i));
    }
    void push_back(T v)
    {
        data.push_back(std::move(v));
    }
    void reserve(size_t n)
    {
        data.reserve(n);
    }
    auto begin() const
    {
        return data.begin();
    }
    auto end() const
    {
        return data.end();
    }
    auto begin()
    {
        return data.begin();
    }
    auto end()
    {
        return data.end();
    }
};

// @ENGINE utils/math.h@

// @ENGINE lifeCycleRegistry.h@

struct KVCacheDesc
{
    int capacity = 0;
    int historyLength = 0;
};

struct BatchDesc
{
    std::vector<KVCacheDesc> kvCaches;
    int systemPromptLength = 0;
};

struct SwaScratchReuseConfig
{
    int maxRewindLen = 0;
};

struct Rational // used only under scratch reuse, which the cases leave off
{
    int num = 0;
    int den = 1;
    int ceilMul(int x) const
    {
        return (x * num + den - 1) / den;
    }
};

enum class CacheTier
{
    GPU_MEM = 0,
    HOST_MEM = 1,
    DISK = 2
};

struct GpuCacheTierConfig
{
    size_t quota = 0;
};

using CacheTierConfig = std::variant<GpuCacheTierConfig>;

inline CacheTier cacheTierOf(CacheTierConfig const&)
{
    return CacheTier::GPU_MEM;
}

inline size_t cacheTierQuota(CacheTierConfig const& c)
{
    return std::get<GpuCacheTierConfig>(c).quota;
}

struct HostMem
{
    static constexpr size_t kAlignment = 4096;
};

struct CacheLevelManager
{
    static size_t cacheTierGranularity(CacheTier tier, size_t quota);
};

struct CacheLevelStorage
{
    static std::pair<SlotCount, size_t> grainsToSlots(
        size_t pgGrains, TypedVec<PoolIndex, size_t> const& slotSizeList, size_t granularity);
    static size_t grainsForSlots(SlotCount numSlots, TypedVec<PoolIndex, size_t> const& slotSizeList, size_t granularity);
    static TypedVec<PoolGroupIndex, SlotCount> ratioToSlotCountList(size_t quota,
        TypedVec<PoolGroupIndex, TypedVec<PoolIndex, size_t>> const& sizeLists,
        TypedVec<PoolGroupIndex, float> const& ratioList, size_t granularity,
        TypedVec<PoolGroupIndex, SlotCount> const& minSlots);
};

struct PooledPhysMemAllocator
{
    size_t size;
    explicit PooledPhysMemAllocator(size_t s)
        : size(s)
    {
    }
    size_t physMemSize() const
    {
        return size;
    }
};

// Stand-in: a recurrent (SSM) life cycle keeps one state whatever a request's length; an
// attention one grows (the definition was not in the stored source).
inline bool hasConstStateSize(LifeCycle const& lc)
{
    return std::holds_alternative<SsmLifeCycle>(lc);
}

// The life cycles in registration order, iterated as (id, life cycle) pairs.
struct LifeCycleRegistry
{
    std::vector<LifeCycle> list;
    std::optional<LifeCycleId> ssm;

    struct Item
    {
        LifeCycleId id;
        LifeCycle const& lc;
    };

    struct Iter
    {
        LifeCycleRegistry const* r;
        int i;
        Item operator*() const
        {
            return {LifeCycleId{i}, r->list[static_cast<size_t>(i)]};
        }
        Iter& operator++()
        {
            ++i;
            return *this;
        }
        bool operator!=(Iter const& o) const
        {
            return i != o.i;
        }
    };

    Iter begin() const
    {
        return {this, 0};
    }
    Iter end() const
    {
        return {this, static_cast<int>(list.size())};
    }
    LifeCycle const& operator[](LifeCycleId id) const
    {
        return list[toSizeT(id)];
    }
    std::optional<LifeCycleId> ssmLifeCycleId() const
    {
        return ssm;
    }
    std::vector<std::pair<LifeCycleId, AttnLifeCycle const*>> attentionLifeCycles() const
    {
        std::vector<std::pair<LifeCycleId, AttnLifeCycle const*>> out;
        for (int i = 0; i < static_cast<int>(list.size()); ++i)
            if (auto const* a = std::get_if<AttnLifeCycle>(&list[static_cast<size_t>(i)]))
                out.emplace_back(LifeCycleId{i}, a);
        return out;
    }
};

struct LifeCycleSpan
{
    std::vector<LifeCycleId> ids;
    auto begin() const
    {
        return ids.begin();
    }
    auto end() const
    {
        return ids.end();
    }
};

struct PoolGroupMapping
{
    std::vector<PoolGroupIndex> forward;
    PoolGroupIndex poolGroup(LifeCycleId lc) const
    {
        return forward.at(toSizeT(lc));
    }
    LifeCycleSpan lifeCycles(PoolGroupIndex pg) const
    {
        LifeCycleSpan out;
        for (int i = 0; i < static_cast<int>(forward.size()); ++i)
            if (forward[static_cast<size_t>(i)] == pg)
                out.ids.push_back(LifeCycleId{i});
        return out;
    }
};

struct StorageConfig
{
    std::vector<CacheTierConfig> cacheTiers;
};

struct Levels // the constructor only reserves room for its cache levels here
{
    void reserve(size_t)
    {
    }
};

struct StorageManager
{
    LifeCycleRegistry mLifeCycles;
    PoolGroupMapping mMapping;
    TypedVec<PoolGroupIndex, TypedVec<PoolIndex, size_t>> mSizes;
    TypedVec<PoolGroupIndex, SlotCount> mMinSlots;
    std::optional<SwaScratchReuseConfig> mSwaScratchReuse;
    TypedVec<LifeCycleId, Rational> mSlotUtilFracMax;
    std::unique_ptr<PooledPhysMemAllocator> mGpuPhysMemAllocator;
    Levels mLevels;
    TypedVec<PoolGroupIndex, float> mHotRatio;

    PoolGroupMapping const& poolGroupMapping(CacheLevel) const
    {
        return mMapping;
    }
    LifeCycleId numLifeCycles() const
    {
        return LifeCycleId{static_cast<int>(mLifeCycles.list.size())};
    }
    PoolGroupIndex numPoolGroups(CacheLevel = kHotLevel) const
    {
        return mSizes.size();
    }
    TypedVec<PoolIndex, size_t> slotSize(CacheLevel, PoolGroupIndex pg) const
    {
        return mSizes[pg];
    }
    TypedVec<PoolIndex, size_t> slotSize(PoolGroupIndex pg) const
    {
        return mSizes[pg];
    }

    PoolGroupIndex getPoolGroupIndex(CacheLevel level, LifeCycleId lc) const;
    PoolGroupIndex getPoolGroupIndex(LifeCycleId lc) const;
    bool poolGroupNeedsHeadroomForGrowth(PoolGroupIndex pgIdx) const;
    TypedVec<PoolGroupIndex, float> toPoolGroupRatio(
        CacheLevel level, TypedVec<LifeCycleId, float> const& lifeCycleRatio) const;
    TypedVec<LifeCycleId, float> ratioFromBatch(BatchDesc const& batch, int tokensPerBlock,
        std::optional<SwaScratchReuseConfig> const& swaScratchReuse, size_t granularity) const;
    TypedVec<LifeCycleId, SlotCount> computeSlotsFromConstraints(std::vector<BatchDesc> const& constraints,
        int tokensPerBlock, std::optional<SwaScratchReuseConfig> const& swaScratchReuse, float maxUtilForResume) const;
    TypedVec<PoolGroupIndex, SlotCount> computePoolGroupMinSlotsFromConstraints(
        std::vector<BatchDesc> const& constraints, int tokensPerBlock,
        std::optional<SwaScratchReuseConfig> const& swaScratchReuse, float maxUtilForResume) const;
    TypedVec<LifeCycleId, SlotCount> computeSlotsForBatch(
        BatchDesc const& batch, int tokensPerBlock, std::optional<SwaScratchReuseConfig> const& swaScratchReuse) const;
    TypedVec<PoolGroupIndex, SlotCount> computePoolGroupSlotsForBatch(
        BatchDesc const& batch, int tokensPerBlock, std::optional<SwaScratchReuseConfig> const& swaScratchReuse) const;
    TypedVec<LifeCycleId, size_t> slotsToBytes(TypedVec<LifeCycleId, SlotCount> const& numSlots, size_t granularity) const;
    TypedVec<PoolGroupIndex, size_t> slotsToBytes(
        TypedVec<PoolGroupIndex, SlotCount> const& numSlots, size_t granularity) const;
    TypedVec<PoolGroupIndex, SlotCount> computeSlotCountForLevel(CacheTierConfig const& tierConfig,
        TypedVec<PoolGroupIndex, TypedVec<PoolIndex, size_t>> const& slotSizeLists,
        TypedVec<PoolGroupIndex, float> const& ratio, TypedVec<PoolGroupIndex, SlotCount> const& minSlots) const;
    size_t minQuotaForLevel(TypedVec<PoolGroupIndex, TypedVec<PoolIndex, size_t>> const& slotSizeLists,
        size_t granularity, TypedVec<PoolGroupIndex, SlotCount> const& minSlots) const;

    // The constructor's hot-tier sizing, with the constructor's own parameter names.
    TypedVec<PoolGroupIndex, SlotCount> sizeHotTier(StorageConfig const& config, int tokensPerBlock,
        std::optional<BatchDesc> const& typicalBatch, std::vector<BatchDesc> const& constraints,
        std::optional<std::vector<float>> const& initialPoolRatio, float maxUtilForResume)
    {
        auto const& slotSizeLists = mSizes;
        // @ENGINE StorageManager::StorageManager@
        mHotRatio = hotRatio;
        return gpuSlotCounts;
    }
};

// @ENGINE storageManager.cpp@

// @ENGINE storage/core.cpp@

} // namespace kv

namespace
{

std::vector<kv::KVCacheDesc> readBatch(std::istream& in)
{
    int n = 0;
    in >> n;
    std::vector<kv::KVCacheDesc> out(static_cast<size_t>(n));
    for (auto& d : out)
        in >> d.capacity >> d.historyLength;
    return out;
}

std::string runCase(std::string const& line)
{
    using namespace kv;
    std::istringstream in(line);
    int tpb = 0;
    size_t quota = 0;
    float util = 0.0F;
    int nLc = 0;
    in >> tpb >> quota >> util >> nLc;
    StorageManager sm;
    for (int i = 0; i < nLc; ++i)
    {
        int window = 0, sinks = 0, ssm = 0;
        in >> window >> sinks >> ssm;
        if (ssm)
        {
            sm.mLifeCycles.ssm = LifeCycleId{i};
            sm.mLifeCycles.list.emplace_back(SsmLifeCycle{});
        }
        else
        {
            std::optional<int> w;
            if (window >= 0)
                w = window;
            sm.mLifeCycles.list.emplace_back(AttnLifeCycle{w, sinks});
        }
    }
    sm.mSlotUtilFracMax = TypedVec<LifeCycleId, Rational>(LifeCycleId{nLc});
    int nPg = 0;
    in >> nPg;
    for (int g = 0; g < nPg; ++g)
    {
        int nPools = 0;
        in >> nPools;
        TypedVec<PoolIndex, size_t> sizes;
        for (int p = 0; p < nPools; ++p)
        {
            size_t s = 0;
            in >> s;
            sizes.push_back(s);
        }
        sm.mSizes.push_back(sizes);
    }
    for (int i = 0; i < nLc; ++i)
    {
        int pg = 0;
        in >> pg;
        sm.mMapping.forward.push_back(PoolGroupIndex{pg});
    }
    int hasTypical = 0;
    in >> hasTypical;
    std::optional<BatchDesc> typical;
    if (hasTypical)
        typical = BatchDesc{readBatch(in), 0};
    int nConstraints = 0;
    in >> nConstraints;
    std::vector<BatchDesc> constraints;
    for (int c = 0; c < nConstraints; ++c)
        constraints.push_back(BatchDesc{readBatch(in), 0});
    int hasRatio = 0;
    in >> hasRatio;
    std::optional<std::vector<float>> ratio;
    if (hasRatio)
    {
        ratio.emplace();
        for (int i = 0; i < nLc; ++i)
        {
            double r = 0.0;
            in >> r;
            ratio->push_back(static_cast<float>(r));
        }
    }
    StorageConfig config{{GpuCacheTierConfig{quota}}};
    std::ostringstream out;
    try
    {
        auto slots = sm.sizeHotTier(config, tpb, typical, constraints, ratio, util);
        out << "slots";
        for (auto s : slots)
            out << ' ' << s;
        out << " min";
        for (auto s : sm.mMinSlots)
            out << ' ' << s;
        out << " ratio";
        out.precision(9);
        for (auto r : sm.mHotRatio)
            out << ' ' << r;
    }
    catch (std::exception const& e)
    {
        out.str("");
        out << "error " << e.what();
    }
    return out.str();
}

} // namespace

int main()
{
    std::string line;
    while (std::getline(std::cin, line))
    {
        if (!line.empty())
            std::cout << runCase(line) << '\n';
    }
    return 0;
}
